import java.net.URI;
import java.net.http.HttpClient;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.core.ResponseBytes;
import software.amazon.awssdk.core.async.AsyncRequestBody;
import software.amazon.awssdk.core.async.AsyncResponseTransformer;
import software.amazon.awssdk.core.checksums.RequestChecksumCalculation;
import software.amazon.awssdk.core.checksums.ResponseChecksumValidation;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.http.crt.AwsCrtAsyncHttpClient;
import software.amazon.awssdk.http.nio.netty.NettyNioAsyncHttpClient;
import software.amazon.awssdk.http.urlconnection.UrlConnectionHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3AsyncClient;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * Which HTTP client the S3 tier runs on: the AWS SDK's Netty async client, its CRT-based async client
 * (native aws-c-* libraries through JNI) and its sync URLConnection client (one virtual thread per
 * request), each putting and getting the same 32 MiB objects to the same server, every object in
 * flight at once. Run by s3-clients.sh (which resolves the three clients and starts s3proxy).
 *
 * usage: java -cp 'lib/*' S3Clients.java ENDPOINT BUCKET CHUNKS RUNS
 */
public final class S3Clients {
    public static void main(String[] args) throws Exception {
        URI endpoint = URI.create(args[0]);
        String bucket = args[1];
        int chunks = Integer.parseInt(args[2]);
        int runs = Integer.parseInt(args[3]);
        int size = 32 << 20;
        ByteBuffer body = ByteBuffer.allocateDirect(size);
        for (int i = 0; i < size; i += 8) {
            body.putLong(i, i * 0x9E3779B97F4A7C15L);
        }
        var creds = StaticCredentialsProvider.create(AwsBasicCredentials.create(args.length > 4 ? args[4] : "lmcache4j-local",
                args.length > 5 ? args[5] : "lmcache4j-local-secret"));
        S3AsyncClient netty = S3AsyncClient.builder().httpClientBuilder(NettyNioAsyncHttpClient.builder().maxConcurrency(64))
                .endpointOverride(endpoint).forcePathStyle(true).region(Region.US_EAST_1).credentialsProvider(creds)
                .requestChecksumCalculation(RequestChecksumCalculation.WHEN_REQUIRED)
                .responseChecksumValidation(ResponseChecksumValidation.WHEN_REQUIRED).build();
        S3AsyncClient crt = S3AsyncClient.builder().httpClientBuilder(AwsCrtAsyncHttpClient.builder().maxConcurrency(64))
                .endpointOverride(endpoint).forcePathStyle(true).region(Region.US_EAST_1).credentialsProvider(creds)
                .requestChecksumCalculation(RequestChecksumCalculation.WHEN_REQUIRED)
                .responseChecksumValidation(ResponseChecksumValidation.WHEN_REQUIRED).build();
        S3Client url = S3Client.builder().httpClientBuilder(UrlConnectionHttpClient.builder())
                .endpointOverride(endpoint).forcePathStyle(true).region(Region.US_EAST_1).credentialsProvider(creds)
                .requestChecksumCalculation(RequestChecksumCalculation.WHEN_REQUIRED)
                .responseChecksumValidation(ResponseChecksumValidation.WHEN_REQUIRED).build();
        ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor();
        double bytes = (double) size * chunks;
        for (int run = 0; run <= runs; run++) {
            String tag = run == 0 ? " (warmup)" : "";
            for (String name : List.of("netty", "crt", "urlconnection")) {
                String prefix = name + "-" + run + "-";
                long t0 = System.nanoTime();
                if (name.equals("urlconnection")) {
                    List<Future<?>> f = new ArrayList<>();
                    for (int i = 0; i < chunks; i++) {
                        String key = prefix + i;
                        f.add(threads.submit(() -> url.putObject(b -> b.bucket(bucket).key(key), RequestBody.fromByteBuffer(body.duplicate()))));
                    }
                    for (Future<?> x : f) {
                        x.get();
                    }
                } else {
                    S3AsyncClient c = name.equals("netty") ? netty : crt;
                    List<CompletableFuture<?>> f = new ArrayList<>();
                    for (int i = 0; i < chunks; i++) {
                        String key = prefix + i;
                        f.add(c.putObject(b -> b.bucket(bucket).key(key).contentLength((long) size),
                                AsyncRequestBody.fromByteBufferUnsafe(body.duplicate())));
                    }
                    CompletableFuture.allOf(f.toArray(CompletableFuture[]::new)).join();
                }
                long t1 = System.nanoTime();
                if (name.equals("urlconnection")) {
                    List<Future<ResponseBytes<?>>> f = new ArrayList<>();
                    for (int i = 0; i < chunks; i++) {
                        String key = prefix + i;
                        f.add(threads.submit(() -> (ResponseBytes<?>) url.getObjectAsBytes(b -> b.bucket(bucket).key(key))));
                    }
                    for (Future<ResponseBytes<?>> x : f) {
                        check(x.get().asByteBuffer(), size);
                    }
                } else {
                    S3AsyncClient c = name.equals("netty") ? netty : crt;
                    List<CompletableFuture<? extends ResponseBytes<?>>> f = new ArrayList<>();
                    for (int i = 0; i < chunks; i++) {
                        String key = prefix + i;
                        f.add(c.getObject(b -> b.bucket(bucket).key(key), AsyncResponseTransformer.toBytes()));
                    }
                    for (CompletableFuture<? extends ResponseBytes<?>> x : f) {
                        check(x.join().asByteBuffer(), size);
                    }
                }
                long t2 = System.nanoTime();
                System.out.printf("run %d%s %-13s put %.3f GB/s  get %.3f GB/s%n", run, tag, name, bytes / (t1 - t0),
                        bytes / (t2 - t1));
            }
        }
        netty.close();
        crt.close();
        url.close();
        threads.close();
    }

    private static void check(ByteBuffer b, int size) {
        if (b.remaining() != size) {
            throw new IllegalStateException("short object: " + b.remaining());
        }
    }
}
