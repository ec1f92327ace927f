package lmcache4j.bench.s3;

import java.io.PrintStream;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import lmcache4j.allocator.DType;
import lmcache4j.allocator.HostArenaOptions;
import lmcache4j.allocator.HostMemoryAllocator;
import lmcache4j.allocator.MemoryFormat;
import lmcache4j.allocator.MemoryObj;
import lmcache4j.allocator.TensorShape;
import lmcache4j.engine.key.CacheEngineKey;
import lmcache4j.engine.key.ChunkHash;
import lmcache4j.engine.remote.RemoteConnectorSettings;
import lmcache4j.engine.remote.RemoteMetadata;
import lmcache4j.s3.S3Connector;
import lmcache4j.s3.S3Location;
import lmcache4j.s3.S3Settings;
import lmcache4j.s3.proxy.S3ProxyProcess;
import software.amazon.awssdk.core.ResponseBytes;
import software.amazon.awssdk.core.async.AsyncRequestBody;
import software.amazon.awssdk.core.async.AsyncResponseTransformer;
import software.amazon.awssdk.services.s3.S3AsyncClient;
import software.amazon.awssdk.services.s3.model.GetObjectResponse;

/**
 * The S3 tier's put and get bandwidth against the raw AWS SDK client moving the same bytes to the same
 * server in the same runs, and its ranged parallel GETs against one GET per object. The server is a
 * real S3 API server (s3proxy) over a directory ({@code /dev/shm} when it has room, so the disk is not
 * what is measured); chunks are 256-token Llama-3-8B chunks (KV_2LTD [2, 32, 256, 1024] bf16, 32 MiB).
 *
 * <ul>
 *   <li>tier put: {@link S3Connector#put} of every chunk at once (CRC32C, user metadata, the off-heap
 *       payload sent without a copy); raw put: the SDK client's {@code putObject} of the same bytes from a
 *       direct buffer ({@code fromByteBufferUnsafe}), every chunk at once.</li>
 *   <li>tier get: {@link S3Connector#get} into off-heap objects (one GET per object, the default
 *       {@code s3_part_size: 0}; CRC32C checked); raw get: {@code getObject} with the SDK's own
 *       {@code toBytes()} transformer.</li>
 *   <li>ranged against single: the tier's get in parallel ranged parts of {@code --part-mb} against one GET.</li>
 * </ul>
 * Runs alternate between the tier and the raw client, so both see the same server state.
 */
public final class S3Bench {
    /** The Llama-3-8B chunk: [2, 32, 256, 1024] bf16. */
    public static final TensorShape CHUNK = TensorShape.of(2, 32, 256, 1024);
    private static final String BUCKET = "bench";

    private S3Bench() {
    }

    /**
     * @param chunks  chunks per put and get, all in flight at once
     * @param runs    measured runs
     * @param warmup  unmeasured runs first
     * @param partMb  the ranged GETs' part size in MiB
     * @param dir     where s3proxy keeps its objects; empty: /dev/shm when it has room, else a temporary directory
     */
    public record Settings(int chunks, int runs, int warmup, int partMb, Optional<Path> dir) {
    }

    /**
     * Bandwidths in GB/s (10^9 bytes a second), and this process's CPU seconds per GB moved (the client's
     * own cost: the server is another process), medians over the runs.
     */
    public record Result(long chunkBytes, int chunks, int runs, String storage, double putGbps, double rawPutGbps,
                         double getGbps, double rawGetGbps, double singleGetGbps, double rangedGetGbps, int partMb,
                         double putCpuPerGb, double rawPutCpuPerGb, double getCpuPerGb, double rawGetCpuPerGb) {
        /** The raw client's CPU per GB over the tier's: 1 when the tier costs the client nothing more. */
        public double putCpuVsRaw() {
            return rawPutCpuPerGb / putCpuPerGb;
        }

        public double getCpuVsRaw() {
            return rawGetCpuPerGb / getCpuPerGb;
        }

        public double putVsRaw() {
            return putGbps / rawPutGbps;
        }

        public double getVsRaw() {
            return getGbps / rawGetGbps;
        }

        public double rangedVsSingle() {
            return rangedGetGbps / singleGetGbps;
        }
    }

    public static Result run(Settings s, PrintStream progress) throws Exception {
        long chunkBytes = CHUNK.byteSize(DType.BFLOAT16);
        Path dir = s.dir().orElseGet(() -> shmOrTemp(chunkBytes * s.chunks() * 4));
        Path serverDir = Files.createTempDirectory(dir, "lmcache4j-s3bench-");
        RemoteMetadata full = new RemoteMetadata(Math.toIntExact(chunkBytes), MemoryFormat.KV_2LTD, Optional.of(DType.BFLOAT16), CHUNK);
        try (S3ProxyProcess server = S3ProxyProcess.start(serverDir, 0, BUCKET);
             HostMemoryAllocator memory = HostMemoryAllocator.tensor("s3-bench", chunkBytes * (2L * s.chunks() + 1), HostArenaOptions.DEFAULT)) {
            progress.println("s3proxy on port " + server.port() + " over " + serverDir);
            Map<String, Object> ranged = new HashMap<>(S3ProxyProcess.credentials());
            ranged.put("s3_part_size", (long) s.partMb() << 20);
            Map<String, Object> single = new HashMap<>(S3ProxyProcess.credentials());
            single.put("s3_part_size", 0L);
            String url = server.url(BUCKET);
            S3Location location = S3Location.parse(url);
            try (S3Connector tier = S3Connector.open(url, new RemoteConnectorSettings(single, Optional.of(full)));
                 S3Connector rangedGets = S3Connector.open(url, new RemoteConnectorSettings(ranged, Optional.of(full)));
                 S3AsyncClient raw = S3Connector.client(location, S3Settings.of(single, location))) {
                List<MemoryObj> sources = new ArrayList<>();
                for (int i = 0; i < s.chunks(); i++) {
                    MemoryObj obj = memory.allocate(CHUNK, DType.BFLOAT16, MemoryFormat.KV_2LTD).orElseThrow();
                    fill(obj.segment(), i);
                    sources.add(obj);
                }
                List<Double> put = new ArrayList<>();
                List<Double> rawPut = new ArrayList<>();
                List<Double> get = new ArrayList<>();
                List<Double> rawGet = new ArrayList<>();
                List<Double> rangedGet = new ArrayList<>();
                List<Double> putCpu = new ArrayList<>();
                List<Double> rawPutCpu = new ArrayList<>();
                List<Double> getCpu = new ArrayList<>();
                List<Double> rawGetCpu = new ArrayList<>();
                try {
                    for (int run = 0; run < s.warmup() + s.runs(); run++) {
                        boolean measured = run >= s.warmup();
                        List<CacheEngineKey> keys = new ArrayList<>();
                        for (int i = 0; i < s.chunks(); i++) {
                            keys.add(new CacheEngineKey("bench/s3", 1, 0, ChunkHash.ofLong(run * 1000L + i + 1), DType.BFLOAT16));
                        }
                        long c0 = cpuNanos();
                        double tPut = seconds(() -> {
                            List<CompletableFuture<Void>> f = new ArrayList<>();
                            for (int i = 0; i < keys.size(); i++) {
                                f.add(tier.put(keys.get(i), full, sources.get(i).segment()));
                            }
                            join(f);
                        });
                        long c1 = cpuNanos();
                        double tRawPut = seconds(() -> {
                            List<CompletableFuture<?>> f = new ArrayList<>();
                            for (int i = 0; i < keys.size(); i++) {
                                ByteBuffer body = sources.get(i).segment().asByteBuffer();
                                String key = "raw-" + S3Connector.objectKey(keys.get(i));
                                f.add(raw.putObject(b -> b.bucket(BUCKET).key(key).contentLength(chunkBytes),
                                        AsyncRequestBody.fromByteBufferUnsafe(body)));
                            }
                            join(f);
                        });
                        long c2 = cpuNanos();
                        double tGet = seconds(() -> readAll(tier, keys, memory, sources));
                        long c3 = cpuNanos();
                        double tRawGet = seconds(() -> {
                            List<CompletableFuture<ResponseBytes<GetObjectResponse>>> f = new ArrayList<>();
                            for (CacheEngineKey k : keys) {
                                String key = "raw-" + S3Connector.objectKey(k);
                                f.add(raw.getObject(b -> b.bucket(BUCKET).key(key), AsyncResponseTransformer.toBytes()));
                            }
                            for (CompletableFuture<ResponseBytes<GetObjectResponse>> r : f) {
                                if (r.get(10, TimeUnit.MINUTES).asByteBuffer().remaining() != chunkBytes) {
                                    throw new IllegalStateException("the raw GET read a short object");
                                }
                            }
                        });
                        long c4 = cpuNanos();
                        double tRanged = seconds(() -> readAll(rangedGets, keys, memory, sources));
                        double bytes = (double) chunkBytes * s.chunks();
                        progress.printf("run %d%s: put %.2f raw %.2f, get %.2f raw %.2f, ranged GETs %.2f GB/s%n", run,
                                measured ? "" : " (warmup)", bytes / tPut / 1e9, bytes / tRawPut / 1e9, bytes / tGet / 1e9,
                                bytes / tRawGet / 1e9, bytes / tRanged / 1e9);
                        if (measured) {
                            put.add(bytes / tPut / 1e9);
                            rawPut.add(bytes / tRawPut / 1e9);
                            get.add(bytes / tGet / 1e9);
                            rawGet.add(bytes / tRawGet / 1e9);
                            rangedGet.add(bytes / tRanged / 1e9);
                            putCpu.add((c1 - c0) / bytes);
                            rawPutCpu.add((c2 - c1) / bytes);
                            getCpu.add((c3 - c2) / bytes);
                            rawGetCpu.add((c4 - c3) / bytes);
                        }
                        deleteRun(server, keys);
                    }
                } finally {
                    sources.forEach(MemoryObj::release);
                }
                return new Result(chunkBytes, s.chunks(), s.runs(), dir.toString(), median(put), median(rawPut), median(get),
                        median(rawGet), median(get), median(rangedGet), s.partMb(), median(putCpu), median(rawPutCpu),
                        median(getCpu), median(rawGetCpu));
            }
        } finally {
            deleteTree(serverDir);
        }
    }

    /** Gets every key at once through {@code c}, checks every byte against its source and releases the copies. */
    private static void readAll(S3Connector c, List<CacheEngineKey> keys, HostMemoryAllocator memory, List<MemoryObj> sources)
            throws Exception {
        List<CompletableFuture<Optional<MemoryObj>>> f = new ArrayList<>();
        for (CacheEngineKey k : keys) {
            f.add(c.get(k, m -> memory.allocate(m.toShape(), m.dtype().orElseThrow(), m.format())));
        }
        for (int i = 0; i < f.size(); i++) {
            MemoryObj obj = f.get(i).get(10, TimeUnit.MINUTES).orElseThrow(() -> new IllegalStateException("a get missed"));
            try {
                if (obj.segment().mismatch(sources.get(i).segment()) != -1) {
                    throw new IllegalStateException("chunk " + i + " read back different bytes");
                }
            } finally {
                obj.release();
            }
        }
    }

    /** Removes a run's objects from the server's directory (files; s3proxy reads the directory as it is). */
    private static void deleteRun(S3ProxyProcess server, List<CacheEngineKey> keys) throws Exception {
        for (CacheEngineKey k : keys) {
            Files.deleteIfExists(server.dataDirectory().resolve(BUCKET).resolve(S3Connector.objectKey(k)));
            Files.deleteIfExists(server.dataDirectory().resolve(BUCKET).resolve("raw-" + S3Connector.objectKey(k)));
        }
    }

    private static void fill(MemorySegment s, int seed) {
        for (long i = 0; i < s.byteSize(); i += 8) {
            s.set(ValueLayout.JAVA_LONG_UNALIGNED, i, (i + seed) * 0x9E3779B97F4A7C15L);
        }
    }

    private static Path shmOrTemp(long bytes) {
        Path shm = Path.of("/dev/shm");
        try {
            if (Files.isDirectory(shm) && Files.isWritable(shm) && Files.getFileStore(shm).getUsableSpace() > bytes) {
                return shm;
            }
        } catch (Exception e) {
            // fall through
        }
        return Path.of(System.getProperty("java.io.tmpdir"));
    }

    /** This process's CPU time (every thread, GC included; s3proxy runs in another process). */
    private static long cpuNanos() {
        return ((com.sun.management.OperatingSystemMXBean) java.lang.management.ManagementFactory.getOperatingSystemMXBean())
                .getProcessCpuTime();
    }

    private interface Timed {
        void run() throws Exception;
    }

    private static double seconds(Timed t) throws Exception {
        long start = System.nanoTime();
        t.run();
        return (System.nanoTime() - start) / 1e9;
    }

    private static void join(List<? extends CompletableFuture<?>> futures) throws Exception {
        for (CompletableFuture<?> f : futures) {
            f.get(10, TimeUnit.MINUTES);
        }
    }

    private static double median(List<Double> v) {
        List<Double> sorted = v.stream().sorted().toList();
        int n = sorted.size();
        return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
    }

    private static void deleteTree(Path dir) {
        try (var paths = Files.walk(dir)) {
            paths.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (Exception e) {
            // a leftover temporary directory is only space
        }
    }
}
