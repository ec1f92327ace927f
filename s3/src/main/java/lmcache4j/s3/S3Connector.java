package lmcache4j.s3;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.net.ConnectException;
import java.time.Duration;
import java.util.Base64;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Function;
import java.util.function.LongSupplier;
import java.util.zip.CRC32C;

import lmcache4j.allocator.MemoryObj;
import lmcache4j.engine.key.CacheKey;
import lmcache4j.engine.remote.RemoteConnector;
import lmcache4j.engine.remote.RemoteConnectorSettings;
import lmcache4j.engine.remote.RemoteMetadata;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.AwsCredentialsProvider;
import software.amazon.awssdk.auth.credentials.DefaultCredentialsProvider;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.core.async.AsyncRequestBody;
import software.amazon.awssdk.core.checksums.RequestChecksumCalculation;
import software.amazon.awssdk.core.checksums.ResponseChecksumValidation;
import software.amazon.awssdk.core.exception.SdkClientException;
import software.amazon.awssdk.http.nio.netty.NettyNioAsyncHttpClient;
import software.amazon.awssdk.http.nio.netty.SdkEventLoopGroup;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.regions.providers.DefaultAwsRegionProviderChain;
import software.amazon.awssdk.retries.StandardRetryStrategy;
import software.amazon.awssdk.services.s3.S3AsyncClient;
import software.amazon.awssdk.services.s3.S3AsyncClientBuilder;
import software.amazon.awssdk.services.s3.model.GetObjectRequest;
import software.amazon.awssdk.services.s3.model.HeadObjectResponse;
import software.amazon.awssdk.services.s3.model.NoSuchBucketException;
import software.amazon.awssdk.services.s3.model.PutObjectRequest;
import software.amazon.awssdk.services.s3.model.S3Exception;

/**
 * The {@code s3://} remote tier's connector: one S3 object per chunk, in LMCache's S3 naming and byte
 * layout (its {@code S3Connector} at LMCache commit 919072243347aebd99727bc6f13dbcb55a7d7a40):
 *
 * <ul>
 *   <li>object key: the chunk's key string with every {@code /} replaced by {@code _} (LMCache sends
 *       {@code "/" + quote(flat key)}; S3 unquotes it to this key, and the SDK quotes it the same way);</li>
 *   <li>object body: the chunk's payload alone, no header (LMCache's S3 objects hold
 *       {@code memory_obj.byte_array}; a reader knows the shape from its own model, and LMCache refuses an
 *       object whose size is not its full chunk's);</li>
 *   <li>lmcache4j adds two user-metadata headers LMCache ignores: {@code x-amz-meta-lmcache4j-header},
 *       LMCache's 28-byte remote header in base64 (so a partial last chunk or a compressed payload reads
 *       back with its shape), and {@code x-amz-meta-lmcache4j-crc32c}, the payload's CRC32C, checked on
 *       every read (a mismatch is a counted miss that deletes the object).</li>
 * </ul>
 *
 * An object without lmcache4j's header (LMCache's) is read as one full chunk of this engine's model
 * when its size says so; any other object under a key is a counted miss ({@link #foreignObjects()}).
 * Objects larger than {@code s3_part_size} are read with ranged GETs in parallel, pinned to the first
 * part's ETag (an object replaced mid-read is a miss). The SDK retries a 500, 503 or a dropped
 * connection with backoff, at most {@value #MAX_ATTEMPTS} attempts in all; anything else fails the
 * operation, which the remote tier counts and reports to its health tracker.
 */
public final class S3Connector implements RemoteConnector {
    private static final System.Logger LOG = System.getLogger(S3Connector.class.getName());

    /** User metadata (without {@code x-amz-meta-}): LMCache's remote header, base64. */
    static final String HEADER_META = "lmcache4j-header";
    /** User metadata: the payload's CRC32C, eight lowercase hex digits. */
    static final String CRC_META = "lmcache4j-crc32c";
    /** Attempts per request, the first included (the SDK's standard strategy: exponential backoff with jitter). */
    static final int MAX_ATTEMPTS = 3;
    private static final Duration START_CHECK = Duration.ofSeconds(30);

    private final S3AsyncClient client;
    private final S3Location location;
    private final Optional<RemoteMetadata> fullChunk;
    private final int partSize;
    private final LongAdder corrupt = new LongAdder();
    private final LongAdder foreign = new LongAdder();
    private final LongAdder partial = new LongAdder();
    private volatile boolean closed;

    S3Connector(S3AsyncClient client, S3Location location, Optional<RemoteMetadata> fullChunk, int partSize) {
        this.client = Objects.requireNonNull(client, "client");
        this.location = Objects.requireNonNull(location, "location");
        this.fullChunk = Objects.requireNonNull(fullChunk, "fullChunk");
        this.partSize = partSize;
    }

    /**
     * Opens the store {@code url} names and checks the bucket answers (HEAD bucket), so a missing
     * bucket or refused credentials fail at start, naming the setting.
     *
     * @throws IllegalArgumentException for a malformed URL or setting, a bucket that does not exist, or no credentials
     * @throws IOException              when the endpoint cannot be reached or refuses the credentials
     */
    public static S3Connector open(String url, RemoteConnectorSettings settings) throws IOException {
        S3Location location = S3Location.parse(url);
        S3Settings s3 = S3Settings.of(settings.extraConfig(), location);
        S3AsyncClient client = client(location, s3);
        S3Connector connector = new S3Connector(client, location, settings.fullChunk(), s3.partSize());
        try {
            connector.checkBucket();
        } catch (IOException | RuntimeException e) {
            client.close();
            throw e;
        }
        LOG.log(System.Logger.Level.INFO, () -> "S3 tier on " + location.display() + ": " + s3);
        return connector;
    }

    /**
     * The SDK client for {@code location} with {@code s3}'s settings: Netty, bounded retries, no SDK
     * checksums. The connector's own; {@code bench s3} uses one as its raw-client baseline.
     */
    public static S3AsyncClient client(S3Location location, S3Settings s3) {
        NettyNioAsyncHttpClient.Builder http = NettyNioAsyncHttpClient.builder()
                .eventLoopGroup(SdkEventLoopGroup.builder().numberOfThreads(s3.ioThreads()).build())
                .maxConcurrency(s3.maxInFlight())
                .connectionAcquisitionTimeout(Duration.ofSeconds(60))
                .connectionTimeout(Duration.ofSeconds(5));
        S3AsyncClientBuilder b = S3AsyncClient.builder()
                .httpClientBuilder(http)
                .region(region(location, s3))
                .credentialsProvider(credentials(s3))
                .forcePathStyle(location.pathStyle())
                // lmcache4j checks its own CRC32C of every payload; the SDK's trailing checksums need
                // aws-chunked uploads that not every S3-compatible server takes.
                .requestChecksumCalculation(RequestChecksumCalculation.WHEN_REQUIRED)
                .responseChecksumValidation(ResponseChecksumValidation.WHEN_REQUIRED)
                .overrideConfiguration(o -> o.retryStrategy(StandardRetryStrategy.builder().maxAttempts(MAX_ATTEMPTS).build()));
        location.endpointUri(s3.tls()).ifPresent(b::endpointOverride);
        return b.build();
    }

    private static Region region(S3Location location, S3Settings s3) {
        Optional<String> named = s3.region();
        if (named.isPresent()) {
            return Region.of(named.get());
        }
        try {
            return DefaultAwsRegionProviderChain.builder().build().getRegion();
        } catch (SdkClientException e) {
            if (location.endpoint().isEmpty()) {
                throw new IllegalArgumentException("remote_url " + location.display() + " is an AWS bucket and no region "
                        + "is known: set extra_config.s3_region (or AWS_REGION), or name it in the host "
                        + "(s3://BUCKET.s3.REGION.amazonaws.com)");
            }
            return Region.US_EAST_1; // an S3-compatible endpoint: the region only enters the signature
        }
    }

    private static AwsCredentialsProvider credentials(S3Settings s3) {
        if (s3.accessKeyId().isPresent() && s3.secretAccessKey().isPresent()) {
            return StaticCredentialsProvider.create(AwsBasicCredentials.create(s3.accessKeyId().get(), s3.secretAccessKey().get()));
        }
        return DefaultCredentialsProvider.builder().build();
    }

    /** HEAD bucket, at start: the bucket must exist and take these credentials. */
    private void checkBucket() throws IOException {
        try {
            client.headBucket(b -> b.bucket(location.bucket())).get(START_CHECK.toSeconds(), TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while checking bucket " + location.bucket(), e);
        } catch (TimeoutException e) {
            throw new IOException(location.display() + " did not answer HEAD bucket within " + START_CHECK.toSeconds() + " s", e);
        } catch (ExecutionException e) {
            Throwable cause = unwrap(e);
            if (cause instanceof NoSuchBucketException || status(cause) == 404) {
                throw new IllegalArgumentException("remote_url " + location.display() + ": bucket '" + location.bucket()
                        + "' does not exist; create it, or point remote_url at an existing bucket");
            }
            if (status(cause) == 403 || status(cause) == 401) {
                throw new IOException(location.display() + " refused the credentials (HTTP " + status(cause) + "): check "
                        + "extra_config aws_access_key_id / aws_secret_access_key, or the AWS credentials chain "
                        + "(AWS_ACCESS_KEY_ID, ~/.aws/credentials, the instance role)", cause);
            }
            if (cause instanceof SdkClientException c && c.getMessage() != null && c.getMessage().contains("credentials")) {
                throw new IllegalArgumentException("no AWS credentials for " + location.display() + ": set extra_config "
                        + "aws_access_key_id and aws_secret_access_key, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or a "
                        + "profile in ~/.aws/credentials");
            }
            throw new IOException(location.display() + " cannot be reached: " + oneLine(cause), cause);
        }
    }

    @Override
    public String url() {
        return location.display();
    }

    /** The object key of {@code key}: LMCache's flattened key string. */
    public static String objectKey(CacheKey key) {
        return key.toKeyString().replace('/', '_');
    }

    @Override
    public CompletableFuture<Boolean> exists(CacheKey key) {
        if (closed) {
            return closedFuture();
        }
        return client.headObject(b -> b.bucket(location.bucket()).key(objectKey(key))).handle((head, failure) -> {
            if (failure == null) {
                return shapeOf(head.contentLength(), head.metadata()).isPresent();
            }
            if (status(unwrap(failure)) == 404) {
                return false;
            }
            throw new CompletionException(unwrap(failure));
        });
    }

    @Override
    public CompletableFuture<Void> put(CacheKey key, RemoteMetadata metadata, MemorySegment payload) {
        if (closed) {
            return closedFuture();
        }
        CRC32C crc = new CRC32C();
        crc.update(payload.asByteBuffer());
        Map<String, String> meta = new LinkedHashMap<>();
        meta.put(HEADER_META, Base64.getEncoder().encodeToString(metadata.toBytes()));
        meta.put(CRC_META, String.format("%08x", crc.getValue()));
        PutObjectRequest request = PutObjectRequest.builder().bucket(location.bucket()).key(objectKey(key))
                .contentLength(payload.byteSize()).contentType("application/octet-stream").metadata(meta).build();
        // Unsafe: the SDK reads the caller's off-heap bytes without a copy; the caller keeps them until this completes.
        return client.putObject(request, AsyncRequestBody.fromByteBufferUnsafe(payload.asByteBuffer())).thenApply(r -> null);
    }

    @Override
    public CompletableFuture<Optional<MemoryObj>> get(CacheKey key, Function<RemoteMetadata, Optional<MemoryObj>> allocate) {
        if (closed) {
            return closedFuture();
        }
        return new ObjectRead(this, objectKey(key), allocate).start();
    }

    @Override
    public CompletableFuture<Boolean> remove(CacheKey key) {
        if (closed) {
            return closedFuture();
        }
        String objectKey = objectKey(key);
        return exists(key).thenCompose(present -> client.deleteObject(b -> b.bucket(location.bucket()).key(objectKey))
                .thenApply(r -> present));
    }

    @Override
    public CompletableFuture<Void> ping() {
        if (closed) {
            return closedFuture();
        }
        return client.headBucket(b -> b.bucket(location.bucket())).thenApply(r -> null);
    }

    /** Counters the remote tier publishes as {@code lmcache4j:remote_s3_<name>}. */
    @Override
    public Map<String, LongSupplier> counters() {
        return Map.of("corrupt_objects", corrupt::sum, "foreign_objects", foreign::sum, "short_reads", partial::sum);
    }

    /** Objects whose payload failed its CRC32C: served as misses and deleted. */
    public long corruptObjects() {
        return corrupt.sum();
    }

    /** Objects under a key whose size or header is not a chunk this engine can read: misses. */
    public long foreignObjects() {
        return foreign.sum();
    }

    /** Reads that ended before the object's length (a truncated body): misses. */
    public long shortReads() {
        return partial.sum();
    }

    @Override
    public void close() {
        if (!closed) {
            closed = true;
            client.close();
        }
    }

    // ---- shared with ObjectRead -------------------------------------------------------------

    S3AsyncClient client() {
        return client;
    }

    String bucket() {
        return location.bucket();
    }

    int partSize() {
        return partSize;
    }

    void countCorrupt() {
        corrupt.increment();
    }

    void countForeign() {
        foreign.increment();
    }

    void countShortRead() {
        partial.increment();
    }

    /**
     * What an object of {@code size} bytes with {@code userMetadata} holds: the header lmcache4j wrote,
     * when its length is the size; else, for an object without one (LMCache's), this model's full chunk
     * when that is the size. Empty: not a chunk this engine reads.
     */
    Optional<RemoteMetadata> shapeOf(long size, Map<String, String> userMetadata) {
        String header = userMetadata.get(HEADER_META);
        if (header != null) {
            try {
                RemoteMetadata m = RemoteMetadata.decode(Base64.getDecoder().decode(header));
                return m.length() == size ? Optional.of(m) : Optional.empty();
            } catch (IllegalArgumentException e) {
                return Optional.empty();
            }
        }
        return fullChunk.filter(m -> m.length() == size);
    }

    /** The CRC32C the object's metadata declares, if any (a malformed one is a mismatch). */
    static Optional<Long> declaredCrc(Map<String, String> userMetadata) {
        String crc = userMetadata.get(CRC_META);
        if (crc == null) {
            return Optional.empty();
        }
        try {
            return Optional.of(HexFormat.fromHexDigitsToLong(crc.length() == 8 ? crc : "invalid!"));
        } catch (IllegalArgumentException e) {
            return Optional.of(-1L);
        }
    }

    /** Deletes a corrupt object in the background; a failure only leaves it for the next read to find. */
    void deleteQuietly(String objectKey) {
        client.deleteObject(b -> b.bucket(location.bucket()).key(objectKey)).whenComplete((r, e) -> {
            if (e != null) {
                LOG.log(System.Logger.Level.DEBUG, () -> "could not delete corrupt object " + objectKey + ": " + oneLine(e));
            }
        });
    }

    static Throwable unwrap(Throwable t) {
        while ((t instanceof CompletionException || t instanceof ExecutionException) && t.getCause() != null) {
            t = t.getCause();
        }
        return t;
    }

    /** The HTTP status of an S3 error, or 0. */
    static int status(Throwable t) {
        return t instanceof S3Exception s ? s.statusCode() : 0;
    }

    static String oneLine(Throwable t) {
        Throwable root = unwrap(t);
        while (root.getCause() != null && root.getCause() != root && !(root instanceof ConnectException)) {
            root = root.getCause();
        }
        String m = root.getMessage();
        return (m == null || m.isBlank() ? root.getClass().getSimpleName() : m).replaceAll("\\s+", " ");
    }

    private static <T> CompletableFuture<T> closedFuture() {
        return CompletableFuture.failedFuture(new IllegalStateException("the S3 connector is closed"));
    }

    /** HEAD an object: its size and user metadata (the bench and the tests look at objects this way). */
    CompletableFuture<HeadObjectResponse> head(String objectKey) {
        return client.headObject(b -> b.bucket(location.bucket()).key(objectKey));
    }

    /** A GET request for a range of an object, pinned to {@code etag} when given. */
    GetObjectRequest rangeRequest(String objectKey, long from, long toInclusive, Optional<String> etag) {
        GetObjectRequest.Builder b = GetObjectRequest.builder().bucket(location.bucket()).key(objectKey)
                .range("bytes=" + from + "-" + toInclusive);
        etag.ifPresent(b::ifMatch);
        return b.build();
    }
}
