package lmcache4j.bench.remote;

import java.io.IOException;
import java.io.PrintStream;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.OptionalDouble;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.async.RedisAsyncCommands;
import io.lettuce.core.codec.ByteArrayCodec;
import io.lettuce.core.resource.ClientResources;

import lmcache4j.allocator.DType;
import lmcache4j.allocator.HostArenaOptions;
import lmcache4j.allocator.MemoryFormat;
import lmcache4j.allocator.MemoryObj;
import lmcache4j.allocator.TensorShape;
import lmcache4j.allocator.host.HostArena;
import lmcache4j.allocator.pool.MixedMemoryAllocator;
import lmcache4j.allocator.tensor.TensorMemoryAllocator;
import lmcache4j.bench.internal.QuietLogs;
import lmcache4j.engine.key.CacheEngineKey;
import lmcache4j.engine.key.ChunkHash;
import lmcache4j.engine.remote.RemoteBackend;
import lmcache4j.engine.remote.RemoteConnector;
import lmcache4j.engine.remote.RemoteMetadata;
import lmcache4j.engine.remote.lm.LmConnector;
import lmcache4j.engine.remote.redis.RedisClusterProcesses;
import lmcache4j.engine.remote.redis.RedisConnector;
import lmcache4j.engine.remote.redis.RedisLayout;
import lmcache4j.engine.remote.redis.RedisServerProcess;
import lmcache4j.engine.storage.cpu.LocalCpuBackend;
import lmcache4j.server.lm.LmCacheServer;

/**
 * The remote tier's put and get bandwidth, in one process, against the same bytes moved without it.
 * Chunks are 256-token chunks of a Llama-3-8B-shaped KV (KV_2LTD [2, 32, 256, 1024] bf16, 32 MiB).
 *
 * <p>{@code redis}: a {@code redis-server} this benchmark starts on a free loopback port. Tier =
 * {@link RemoteBackend} over {@link RedisConnector} (one Lettuce connection): put = one
 * {@code batchedSubmitPut} of every chunk + {@code awaitPuts} (every chunk in flight at once:
 * {@code max_inflight_mb} is raised to hold them all), get = {@code getBlocking} of every chunk
 * from as many threads as chunks (allocation in a CPU tier, metadata GET, payload GET into the
 * object). Raw = a Lettuce connection of its own with {@code ByteArrayCodec}: SET of every chunk's
 * bytes (a byte[] copied once, untimed) issued asynchronously at once, then GET of every key the
 * same way. {@code redis-benchmark -t set,get -n 20 -d <chunk bytes> -q} reports the server's
 * figure from C clients for the same value size, beside them.
 *
 * <p>{@code lm}: an in-process {@link LmCacheServer} on a free loopback port. Tier = RemoteBackend
 * over {@link LmConnector} (default pool of 4 connections); the ceiling = the same LmConnector's
 * own {@code put}/{@code get} called directly for every chunk at once (no tier: no serde, no
 * in-flight bookkeeping; get into preallocated objects): what the protocol, the server and the
 * connector allow, which the tier can only approach.
 *
 * <p>GB/s = payload bytes ÷ wall time (10⁹ B/s), median over the measured runs after warmup.
 */
public final class RemoteBench {
    static final DType DTYPE = DType.BFLOAT16;
    static final int ALIGN = 4096;
    static final double TIMEOUT_SECS = 120;

    /**
     * @param splitPartMb      the split layout's part size (MiB)
     * @param splitConnections the split layout's connections
     * @param clusterMasters   the sizes of the Redis Clusters to measure both layouts on, one after the other (none: skip)
     */
    public record Settings(int chunks, int runs, int warmup, int layers, int tokens, int hidden, boolean lm,
                           boolean redisBenchmark, int splitPartMb, int splitConnections, List<Integer> clusterMasters) {
        public static final int DEFAULT_CHUNKS = 16;
        public static final int DEFAULT_RUNS = 5;
        public static final int DEFAULT_WARMUP = 1;
        public static final int MAX_CHUNKS = 60; // max_inflight_mb <= 2047
        public static final List<Integer> DEFAULT_CLUSTER_MASTERS = List.of(1, 3);

        public Settings {
            clusterMasters = List.copyOf(clusterMasters);
            RedisLayout.split(splitPartMb, splitConnections); // checks the ranges
        }

        public static Settings defaults() {
            return new Settings(DEFAULT_CHUNKS, DEFAULT_RUNS, DEFAULT_WARMUP, 32, 256, 8 * 128, true, true,
                    RedisLayout.DEFAULT_PART_MB, RedisLayout.DEFAULT_CONNECTIONS, DEFAULT_CLUSTER_MASTERS);
        }

        public RedisLayout splitLayout() {
            return RedisLayout.split(splitPartMb, splitConnections);
        }

        public TensorShape shape() {
            return TensorShape.of(2, layers, tokens, hidden);
        }

        public long chunkBytes() {
            return 2L * layers * tokens * hidden * DTYPE.byteSize();
        }

        public long totalBytes() {
            return chunks * chunkBytes();
        }
    }

    /** One side's medians. */
    public record Pair(double[] put, double[] get) {
        public double putGbps() {
            return median(put);
        }

        public double getGbps() {
            return median(get);
        }
    }

    /** redis-benchmark's SET and GET requests/s for the chunk size, or why there is none. */
    public record RedisBenchmark(OptionalDouble setRps, OptionalDouble getRps, String note) {
    }

    /** Both layouts' tier figures on a Redis Cluster of {@code masters} masters. */
    public record ClusterRun(int masters, Pair single, Pair split) {
    }

    /**
     * @param redisSplit the tier over the split layout, on the same server and in the same runs as {@code redisTier}
     * @param cluster    one entry per {@link Settings#clusterMasters()}
     */
    public record Result(Settings settings, String redisVersion, Pair redisTier, Pair redisSplit, Pair redisRaw,
                         RedisBenchmark redisBenchmark, List<ClusterRun> cluster, Optional<Pair> lmTier,
                         Optional<Pair> lmCeiling, long mismatches) {
    }

    private RemoteBench() {
    }

    public static Result run(Settings s, PrintStream progress) throws Exception {
        QuietLogs quiet = QuietLogs.warningsOnly();
        long bytes = s.totalBytes();
        long slot = (s.chunkBytes() + ALIGN - 1) / ALIGN * ALIGN;
        HostArenaOptions host = HostArenaOptions.DEFAULT.withCudaPinned(false).withHugePages(true).withPrefault(true);
        ExecutorService pool = Executors.newFixedThreadPool(s.chunks());
        try (TensorMemoryAllocator srcAlloc = TensorMemoryAllocator.create("remotebench/src", HostArena.allocate(s.chunks() * slot + ALIGN, host), ALIGN);
             TensorMemoryAllocator dstAlloc = TensorMemoryAllocator.create("remotebench/dst", HostArena.allocate(s.chunks() * slot + ALIGN, host), ALIGN);
             LocalCpuBackend cpu = new LocalCpuBackend(new MixedMemoryAllocator("remotebench/cpu",
                     TensorMemoryAllocator.create("remotebench/cpu/kv", HostArena.allocate(s.chunks() * slot + ALIGN, host), ALIGN)),
                     "LRU", false, 30)) {
            List<MemoryObj> src = new ArrayList<>();
            List<MemoryObj> dst = new ArrayList<>();
            try {
                return measure(s, progress, cpu, srcAlloc, dstAlloc, src, dst, pool);
            } finally {
                src.forEach(MemoryObj::release);
                dst.forEach(MemoryObj::release);
            }
        } finally {
            pool.shutdownNow();
            quiet.close();
        }
    }

    private static Result measure(Settings s, PrintStream progress, LocalCpuBackend cpu, TensorMemoryAllocator srcAlloc,
                                  TensorMemoryAllocator dstAlloc, List<MemoryObj> src, List<MemoryObj> dst,
                                  ExecutorService pool) throws Exception {
        List<CacheEngineKey> keys = new ArrayList<>();
        List<CacheEngineKey> ceilingKeys = new ArrayList<>();
        SplittableRandom random = new SplittableRandom(42);
        for (int i = 0; i < s.chunks(); i++) {
            MemoryObj o = srcAlloc.allocate(s.shape(), DTYPE, MemoryFormat.KV_2LTD).orElseThrow();
            fill(o.segment(), random.nextLong());
            src.add(o);
            MemoryObj d = dstAlloc.allocate(s.shape(), DTYPE, MemoryFormat.KV_2LTD).orElseThrow();
            d.segment().fill((byte) 0);
            dst.add(d);
            keys.add(key(random));
            ceilingKeys.add(key(random));
        }
        long[] mismatches = {0};
        String version = RedisServerProcess.version();
        RedisRuns redis = redisRuns(s, progress, version, cpu, keys, src, pool, mismatches);
        List<ClusterRun> cluster = new ArrayList<>();
        for (int masters : s.clusterMasters()) {
            cluster.add(clusterRun(s, masters, cpu, keys, src, pool, mismatches, progress));
        }
        Optional<Pair[]> lm = s.lm() ? Optional.of(lmRuns(s, progress, cpu, keys, ceilingKeys, src, dst, pool, mismatches))
                : Optional.empty();
        return new Result(s, version, redis.tier(), redis.split(), redis.raw(), redis.benchmark(), cluster,
                lm.map(p -> p[0]), lm.map(p -> p[1]), mismatches[0]);
    }

    /** The Redis runs of one server: the tier in both layouts and raw Lettuce, then redis-benchmark. */
    private record RedisRuns(Pair tier, Pair split, Pair raw, RedisBenchmark benchmark) {
    }

    private static RedisRuns redisRuns(Settings s, PrintStream progress, String version, LocalCpuBackend cpu,
                                       List<CacheEngineKey> keys, List<MemoryObj> src, ExecutorService pool,
                                       long[] mismatches) throws Exception {
        long bytes = s.totalBytes();
        Pair redisTier;
        Pair redisSplit;
        Pair redisRaw;
        try (RedisServerProcess server = RedisServerProcess.start(List.of("--proto-max-bulk-len", "1gb"))) {
            progress.printf(Locale.ROOT, "redis-server %s on 127.0.0.1:%d%n", version, server.port());
            long inflightMb = Math.min(2047, (bytes >> 20) + 64);
            URI url = URI.create("redis://127.0.0.1:" + server.port() + "?timeout_ms=" + (long) (TIMEOUT_SECS * 1000)
                    + "&max_inflight_mb=" + inflightMb);
            RedisConnector connector = RedisConnector.connect(url);
            RedisConnector splitConnector = RedisConnector.connect(url, s.splitLayout());
            byte[][] raw = new byte[s.chunks()][];
            byte[][] rawKeys = new byte[s.chunks()][];
            for (int i = 0; i < s.chunks(); i++) {
                raw[i] = src.get(i).segment().toArray(ValueLayout.JAVA_BYTE);
                rawKeys[i] = ("lmcache4j-redisbench-raw-" + i).getBytes(StandardCharsets.UTF_8);
            }
            ClientResources resources = ClientResources.builder().ioThreadPoolSize(2).computationThreadPoolSize(2).build();
            RedisClient client = RedisClient.create(resources);
            try (RemoteBackend tier = new RemoteBackend(connector, cpu, TIMEOUT_SECS, 3600, TIMEOUT_SECS);
                 RemoteBackend splitTier = new RemoteBackend(splitConnector, cpu, TIMEOUT_SECS, 3600, TIMEOUT_SECS);
                 StatefulRedisConnection<byte[], byte[]> conn = client.connect(ByteArrayCodec.INSTANCE,
                         RedisURI.builder().withHost("127.0.0.1").withPort(server.port())
                                 .withTimeout(Duration.ofSeconds((long) TIMEOUT_SECS)).build())) {
                RedisAsyncCommands<byte[], byte[]> async = conn.async();
                double[][] r = new double[6][s.runs()];
                for (int run = 0; run < s.warmup() + s.runs(); run++) {
                    int m = run - s.warmup();
                    boolean last = run == s.warmup() + s.runs() - 1;
                    double[] rawRun = rawLettuceRun(async, rawKeys, raw, bytes, last, mismatches);
                    Pair t = tierRun(s, tier, keys, src, pool, last, mismatches);
                    Pair sp = tierRun(s, splitTier, keys, src, pool, last, mismatches);
                    if (m >= 0) {
                        r[0][m] = t.put()[0];
                        r[1][m] = t.get()[0];
                        r[2][m] = rawRun[0];
                        r[3][m] = rawRun[1];
                        r[4][m] = sp.put()[0];
                        r[5][m] = sp.get()[0];
                    }
                    progress.printf(Locale.ROOT, "redis %s %d: tier put %.2f get %.2f GB/s; split layout put %.2f get %.2f "
                            + "GB/s; raw Lettuce SET %.2f GET %.2f GB/s%n", m < 0 ? "warmup" : "run", m < 0 ? run + 1 : m + 1,
                            t.put()[0], t.get()[0], sp.put()[0], sp.get()[0], rawRun[0], rawRun[1]);
                }
                requireNoFailedPuts("redis", tier);
                requireNoFailedPuts("redis split layout", splitTier);
                redisTier = new Pair(r[0], r[1]);
                redisRaw = new Pair(r[2], r[3]);
                redisSplit = new Pair(r[4], r[5]);
            } finally {
                client.shutdown();
                resources.shutdown();
            }
            RedisBenchmark rb = s.redisBenchmark() ? redisBenchmark(server.port(), s.chunkBytes(), progress)
                    : new RedisBenchmark(OptionalDouble.empty(), OptionalDouble.empty(), "not run (--no-redis-benchmark)");
            return new RedisRuns(redisTier, redisSplit, redisRaw, rb);
        }
    }

    /** Raw Lettuce SET then GET of every chunk: {SET GB/s, GET GB/s}; the last run compares the bytes read. */
    private static double[] rawLettuceRun(RedisAsyncCommands<byte[], byte[]> async, byte[][] rawKeys, byte[][] raw, long bytes,
                                          boolean last, long[] mismatches) throws Exception {
        long t0 = System.nanoTime();
        List<CompletableFuture<String>> sets = new ArrayList<>();
        for (int i = 0; i < raw.length; i++) {
            sets.add(async.set(rawKeys[i], raw[i]).toCompletableFuture());
        }
        for (CompletableFuture<String> f : sets) {
            if (!"OK".equals(f.get(2 * (long) TIMEOUT_SECS, TimeUnit.SECONDS))) {
                throw new IllegalStateException("raw SET failed");
            }
        }
        double set = gbps(bytes, System.nanoTime() - t0);
        t0 = System.nanoTime();
        List<CompletableFuture<byte[]>> gets = new ArrayList<>();
        for (int i = 0; i < raw.length; i++) {
            gets.add(async.get(rawKeys[i]).toCompletableFuture());
        }
        for (int i = 0; i < raw.length; i++) {
            byte[] got = gets.get(i).get(2 * (long) TIMEOUT_SECS, TimeUnit.SECONDS);
            if (got == null || got.length != raw[i].length) {
                throw new IllegalStateException("raw GET of chunk " + i + " returned "
                        + (got == null ? "nothing" : got.length + " bytes"));
            }
            if (last && !Arrays.equals(got, raw[i])) {
                mismatches[0]++;
            }
        }
        return new double[] {set, gbps(bytes, System.nanoTime() - t0)};
    }

    /** The lm:// runs: {the tier, the connector itself (the ceiling)}. */
    private static Pair[] lmRuns(Settings s, PrintStream progress, LocalCpuBackend cpu, List<CacheEngineKey> keys,
                                 List<CacheEngineKey> ceilingKeys, List<MemoryObj> src, List<MemoryObj> dst,
                                 ExecutorService pool, long[] mismatches) throws Exception {
        long bytes = s.totalBytes();
        int frame = (int) Math.min(Integer.MAX_VALUE - 1024, Math.max(64L << 20, 2 * s.chunkBytes()));
        try (LmCacheServer server = LmCacheServer.start(InetAddress.getLoopbackAddress(), 0, 3 * bytes + (256L << 20),
                Optional.empty(), frame)) {
            LmConnector connector = LmConnector.connect(URI.create("lm://127.0.0.1:" + server.port()
                    + "?timeout_ms=" + (long) (TIMEOUT_SECS * 1000)));
            try (RemoteBackend tier = new RemoteBackend(connector, cpu, TIMEOUT_SECS, 3600, TIMEOUT_SECS)) {
                double[][] r = new double[4][s.runs()];
                for (int run = 0; run < s.warmup() + s.runs(); run++) {
                    int m = run - s.warmup();
                    boolean last = run == s.warmup() + s.runs() - 1;
                    double[] ceiling = lmConnectorRun(connector, ceilingKeys, src, dst, bytes, last, mismatches);
                    Pair t = tierRun(s, tier, keys, src, pool, last, mismatches);
                    if (m >= 0) {
                        r[0][m] = t.put()[0];
                        r[1][m] = t.get()[0];
                        r[2][m] = ceiling[0];
                        r[3][m] = ceiling[1];
                    }
                    progress.printf(Locale.ROOT, "lm %s %d: tier put %.2f get %.2f GB/s; LmConnector direct put %.2f get %.2f GB/s%n",
                            m < 0 ? "warmup" : "run", m < 0 ? run + 1 : m + 1, t.put()[0], t.get()[0], ceiling[0], ceiling[1]);
                }
                requireNoFailedPuts("lm://", tier);
                return new Pair[] {new Pair(r[0], r[1]), new Pair(r[2], r[3])};
            }
        }
    }

    /** The ceiling: every chunk put, then got, through the lm:// connector itself: {put GB/s, get GB/s}. */
    private static double[] lmConnectorRun(LmConnector connector, List<CacheEngineKey> ceilingKeys, List<MemoryObj> src,
                                           List<MemoryObj> dst, long bytes, boolean last, long[] mismatches) throws Exception {
        long t0 = System.nanoTime();
        List<CompletableFuture<Void>> puts = new ArrayList<>();
        for (int i = 0; i < src.size(); i++) {
            puts.add(connector.put(ceilingKeys.get(i), RemoteMetadata.forObject(src.get(i)), src.get(i).segment()));
        }
        for (CompletableFuture<Void> f : puts) {
            f.get(2 * (long) TIMEOUT_SECS, TimeUnit.SECONDS);
        }
        double put = gbps(bytes, System.nanoTime() - t0);
        t0 = System.nanoTime();
        List<CompletableFuture<Optional<MemoryObj>>> gets = new ArrayList<>();
        for (int i = 0; i < src.size(); i++) {
            MemoryObj into = dst.get(i);
            into.retain();
            gets.add(connector.get(ceilingKeys.get(i), meta -> Optional.of(into)));
        }
        for (int i = 0; i < src.size(); i++) {
            MemoryObj got = gets.get(i).get(2 * (long) TIMEOUT_SECS, TimeUnit.SECONDS).orElseThrow(
                    () -> new IllegalStateException("lm:// lost a chunk"));
            got.release();
        }
        double get = gbps(bytes, System.nanoTime() - t0);
        if (last) {
            for (int i = 0; i < src.size(); i++) {
                if (dst.get(i).segment().mismatch(src.get(i).segment()) >= 0) {
                    mismatches[0]++;
                }
            }
        }
        return new double[] {put, get};
    }

    /**
     * Both layouts on a Redis Cluster of {@code masters} masters started for the purpose on loopback
     * ports: the tier over each, in the same runs.
     */
    private static ClusterRun clusterRun(Settings s, int masters, LocalCpuBackend cpu, List<CacheEngineKey> keys,
                                         List<MemoryObj> src, ExecutorService pool, long[] mismatches,
                                         PrintStream progress) throws Exception {
        Path dir = Files.createTempDirectory("lmcache4j-redisbench-cluster-");
        try (RedisClusterProcesses redis = RedisClusterProcesses.start(dir, masters)) {
            progress.printf(Locale.ROOT, "redis cluster of %d masters on %s%n", masters, redis.url());
            long inflightMb = Math.min(2047, (s.totalBytes() >> 20) + 64);
            URI url = URI.create(redis.url() + "?timeout_ms=" + (long) (TIMEOUT_SECS * 1000) + "&max_inflight_mb=" + inflightMb);
            try (RemoteBackend single = new RemoteBackend(RedisConnector.connect(url), cpu, TIMEOUT_SECS, 3600, TIMEOUT_SECS);
                 RemoteBackend split = new RemoteBackend(RedisConnector.connect(url, s.splitLayout()), cpu, TIMEOUT_SECS, 3600,
                         TIMEOUT_SECS)) {
                double[][] r = new double[4][s.runs()];
                for (int run = 0; run < s.warmup() + s.runs(); run++) {
                    int m = run - s.warmup();
                    boolean last = run == s.warmup() + s.runs() - 1;
                    Pair t = tierRun(s, single, keys, src, pool, last, mismatches);
                    Pair sp = tierRun(s, split, keys, src, pool, last, mismatches);
                    if (m >= 0) {
                        r[0][m] = t.put()[0];
                        r[1][m] = t.get()[0];
                        r[2][m] = sp.put()[0];
                        r[3][m] = sp.get()[0];
                    }
                    progress.printf(Locale.ROOT, "redis cluster x%d %s %d: tier put %.2f get %.2f GB/s; split layout put %.2f "
                            + "get %.2f GB/s%n", masters, m < 0 ? "warmup" : "run", m < 0 ? run + 1 : m + 1, t.put()[0],
                            t.get()[0], sp.put()[0], sp.get()[0]);
                }
                requireNoFailedPuts("redis cluster", single);
                requireNoFailedPuts("redis cluster split layout", split);
                return new ClusterRun(masters, new Pair(r[0], r[1]), new Pair(r[2], r[3]));
            }
        } finally {
            try (var files = Files.walk(dir)) {
                files.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
            }
        }
    }

    private static void requireNoFailedPuts(String what, RemoteBackend tier) {
        RemoteBackend.Stats st = tier.stats();
        if (st.failedPuts() != 0 || st.droppedPuts() != 0) {
            throw new IllegalStateException("the " + what + " tier failed or dropped puts: " + st);
        }
    }

    /** One tier put (batchedSubmitPut + awaitPuts) and get (getBlocking from a thread per chunk); GB/s of each. */
    private static Pair tierRun(Settings s, RemoteBackend tier, List<CacheEngineKey> keys, List<MemoryObj> src,
                                ExecutorService pool, boolean verify, long[] mismatches) throws Exception {
        long before = tier.stats().puts();
        long t0 = System.nanoTime();
        tier.batchedSubmitPut(keys, src);
        tier.awaitPuts();
        double put = gbps(s.totalBytes(), System.nanoTime() - t0);
        if (tier.stats().puts() - before != s.chunks()) {
            throw new IllegalStateException("the tier put " + (tier.stats().puts() - before) + " of " + s.chunks()
                    + " chunks: " + tier.stats());
        }
        t0 = System.nanoTime();
        List<Future<MemoryObj>> futures = new ArrayList<>();
        for (CacheEngineKey k : keys) {
            futures.add(pool.submit(() -> tier.getBlocking(k).orElseThrow(
                    () -> new IllegalStateException("the tier lost a chunk: " + tier.stats()))));
        }
        List<MemoryObj> got = new ArrayList<>();
        try {
            for (Future<MemoryObj> f : futures) {
                got.add(f.get());
            }
            double get = gbps(s.totalBytes(), System.nanoTime() - t0);
            for (int i = 0; verify && i < got.size(); i++) {
                if (got.get(i).segment().asSlice(0, s.chunkBytes()).mismatch(src.get(i).segment()) >= 0) {
                    mismatches[0]++;
                }
            }
            return new Pair(new double[] {put}, new double[] {get});
        } finally {
            got.forEach(MemoryObj::release);
            // After a failed get, the later gets' objects are still in their futures: release them too, or the
            // allocator's leak check at close would hide the real error.
            for (Future<MemoryObj> f : futures.subList(got.size(), futures.size())) {
                try {
                    f.get().release();
                } catch (Exception alreadyReported) {
                    // the failure that got us here, or another miss: nothing to release
                }
            }
        }
    }

    private static final Pattern RPS = Pattern.compile("(SET|GET): ([0-9.]+) requests per second");

    /** Runs {@code redis-benchmark -p PORT -t set,get -n 20 -d BYTES -q} if installed. */
    static RedisBenchmark redisBenchmark(int port, long valueBytes, PrintStream progress) {
        Optional<String> exe = RedisServerProcess.executable("redis-benchmark");
        if (exe.isEmpty()) {
            return new RedisBenchmark(OptionalDouble.empty(), OptionalDouble.empty(),
                    "redis-benchmark is not installed (Debian package redis-tools)");
        }
        List<String> cmd = List.of(exe.get(), "-p", Integer.toString(port), "-t", "set,get", "-n", "20", "-d",
                Long.toString(valueBytes), "-q");
        progress.println(String.join(" ", cmd));
        try {
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
            byte[] out = p.getInputStream().readAllBytes();
            if (!p.waitFor(300, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                return new RedisBenchmark(OptionalDouble.empty(), OptionalDouble.empty(), "redis-benchmark timed out");
            }
            String text = new String(out, StandardCharsets.UTF_8);
            OptionalDouble set = OptionalDouble.empty();
            OptionalDouble get = OptionalDouble.empty();
            Matcher m = RPS.matcher(text);
            while (m.find()) {
                double v = Double.parseDouble(m.group(2));
                if (m.group(1).equals("SET")) {
                    set = OptionalDouble.of(v);
                } else {
                    get = OptionalDouble.of(v);
                }
            }
            return new RedisBenchmark(set, get, String.join(" ", cmd).replace(exe.get(), "redis-benchmark")
                    + (set.isEmpty() || get.isEmpty() ? " (output not understood: " + text.strip() + ")" : ""));
        } catch (IOException e) {
            return new RedisBenchmark(OptionalDouble.empty(), OptionalDouble.empty(), "redis-benchmark failed: " + e.getMessage());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return new RedisBenchmark(OptionalDouble.empty(), OptionalDouble.empty(), "interrupted");
        }
    }

    private static CacheEngineKey key(SplittableRandom random) {
        byte[] hash = new byte[32];
        random.nextBytes(hash);
        return new CacheEngineKey("lmcache4j/redisbench-llama-3-8b", 1, 0, ChunkHash.of(hash), DTYPE);
    }

    private static void fill(MemorySegment seg, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        long n = seg.byteSize() / 8;
        for (long i = 0; i < n; i++) {
            seg.setAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, i, r.nextLong());
        }
    }

    static double gbps(long bytes, long nanos) {
        return bytes / (double) Math.max(1, nanos);
    }

    public static double median(double[] values) {
        double[] v = values.clone();
        Arrays.sort(v);
        int n = v.length;
        return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    }
}
