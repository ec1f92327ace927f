package lmcache4j.bench.mp;

import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.OptionalInt;
import java.util.SplittableRandom;
import java.util.concurrent.locks.LockSupport;
import java.util.function.ToDoubleFunction;

import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

import lmcache4j.bench.internal.BenchFiles;
import lmcache4j.bench.internal.QuietLogs;
import lmcache4j.server.mp.MpL2Settings;
import lmcache4j.server.mp.MpServer;
import lmcache4j.server.mp.MpServerSettings;
import lmcache4j.server.mp.wire.IpcCacheServerKey;
import lmcache4j.server.mp.wire.MpKeyCodec;
import lmcache4j.server.mp.wire.MpOperation;
import lmcache4j.server.mp.wire.MpProtocolException;
import lmcache4j.server.mp.wire.MpRegistrationCodec;
import lmcache4j.server.mp.wire.MpScalars;
import lmcache4j.server.mp.wire.MpSchema;
import lmcache4j.server.mp.wire.MpTransferCodec;
import lmcache4j.server.mp.wire.PrepareRetrieveResponse;
import lmcache4j.server.mp.wire.PrepareStoreResponse;
import lmcache4j.server.mp.wire.RegisterEngineDrivenContextPayload;
import lmcache4j.server.mp.wire.RegisterEngineDrivenContextResponse;
import lmcache4j.server.mp.wire.ShmSlot;
import lmcache4j.engine.zmq.OwnedZContext;

/**
 * {@code ./lmcache4j bench mp}: the MP server ({@link MpServer}) as vLLM's LMCache MP connector
 * sees it, measured against what the same machine does without it, in one process and one run.
 * A JeroMQ DEALER speaks the real frames (built with the wire codecs, byte-exact with LMCache's
 * msgspec client), registers an engine-driven context of Llama-3-8B's shape (32 layers, 8 KV heads
 * × 128, bf16, 256-token chunks: 32 MiB an object, world size 1) and maps the pool it is given
 * from {@code /dev/shm} as a worker does. Each run measures:
 * <ul>
 *   <li>the {@code lookup} round trip of a stored prompt (a fresh request id each time, so the
 *       server hashes the prompt as it would for a new request) against a bare ROUTER echo answering
 *       the same frames with the same reply frames, alternating, so the protocol's cost shows;</li>
 *   <li>store and retrieve operations per second: prepare, the 32 MiB copy through the pool,
 *       commit; and the same without the copy (the control path alone);</li>
 *   <li>the pool copies' bytes per second against {@link MemorySegment#copy} of the same bytes
 *       between two private off-heap buffers.</li>
 * </ul>
 * Then a second server with a disk tier ({@code --l2-disk}) measures the load of the prompt from
 * the disk back into its emptied pool against a plain read of the same chunk files.
 * Every retrieved chunk is compared with what was stored; each run stamps the chunks anew, so bytes
 * a previous run left in a slot cannot pass for a copy that did not happen.
 */
public final class MpBench {
    /** The model name the bench registers; any name without {@code @} works. */
    static final String MODEL = "meta-llama/Meta-Llama-3-8B";
    /** Bytes between the per-run stamps written into each chunk: one per page. */
    private static final int STAMP_STRIDE = 4096;
    private static final int REPLY_TIMEOUT_MS = 30_000;

    /**
     * Settings; {@link #defaults()} is the command's run (about half a minute on two cores).
     *
     * @param chunks  256-token chunks in the prompt: stored, looked up and retrieved each run
     * @param lookups lookup round trips (and as many bare echoes) per run
     */
    public record Settings(int chunks, int lookups, int runs, int warmup, int layers, int tokens, int kvHeads,
                           int headSize) {
        public static final int DEFAULT_CHUNKS = 16;
        public static final int DEFAULT_LOOKUPS = 2_000;
        public static final int DEFAULT_RUNS = 5;
        public static final int DEFAULT_WARMUP = 1;

        public Settings {
            if (chunks < 1 || lookups < 1 || runs < 1 || warmup < 0 || layers < 1 || tokens < 1 || kvHeads < 1
                    || headSize < 1) {
                throw new IllegalArgumentException("chunks, lookups, runs and the shape must be >= 1 and warmup >= 0");
            }
        }

        public static Settings defaults() {
            return new Settings(DEFAULT_CHUNKS, DEFAULT_LOOKUPS, DEFAULT_RUNS, DEFAULT_WARMUP, 32, 256, 8, 128);
        }

        public Settings withCounts(int chunks, int lookups, int runs, int warmup) {
            return new Settings(chunks, lookups, runs, warmup, layers, tokens, kvHeads, headSize);
        }

        /** Per-rank hidden size: KV heads × head size. */
        public int hidden() {
            return kvHeads * headSize;
        }

        /** Bytes of one chunk object: K and V × layers × tokens × hidden × 2 (bf16). */
        public long chunkBytes() {
            return 2L * layers * tokens * hidden() * 2;
        }

        /** The pool: every chunk of the prompt plus four of headroom for the allocator's alignment. */
        public long poolBytes() {
            return (chunks + 4L) * chunkBytes();
        }
    }

    /**
     * Medians over the measured runs (each run's p50 and p99 first, then their median).
     *
     * @param lookupP50Us   {@code lookup} round trip (request sent to reply received), p50, µs
     * @param rawRttP50Us   a bare ROUTER echo of the same frames, p50, µs
     * @param l2LoadGbps    chunks loaded from the disk tier into the pool: lookup sent to count received
     * @param l2RawReadGbps the same chunk files read into one direct buffer with FileChannel
     * @param mismatchedChunks retrieved chunks whose bytes differ from what was stored, all runs (the
     *                         lower tier's retrieves included)
     */
    public record Result(Settings settings, double lookupP50Us, double lookupP99Us, double rawRttP50Us,
                         double rawRttP99Us, double storeOpsPerS, double retrieveOpsPerS, double storeControlOpsPerS,
                         double retrieveControlOpsPerS, double poolWriteGbps, double poolReadGbps, double memcpyGbps,
                         double l2LoadGbps, double l2RawReadGbps, String shmName, long poolBytes, long verifiedChunks,
                         long mismatchedChunks, List<RunFigures> runs) {
        /** Bare round trip / lookup round trip at p50: 1 would mean the server adds nothing. */
        public double lookupVsRawRtt() {
            return rawRttP50Us / lookupP50Us;
        }

        public double poolWriteVsMemcpy() {
            return poolWriteGbps / memcpyGbps;
        }

        public double poolReadVsMemcpy() {
            return poolReadGbps / memcpyGbps;
        }

        /** The lower tier's load into the pool / a plain read of the same chunk files: 1 would mean it adds nothing. */
        public double l2LoadVsRawRead() {
            return l2LoadGbps / l2RawReadGbps;
        }
    }

    /** One measured run's figures (µs, operations per second, GB/s = 10^9 B/s). */
    public record RunFigures(double lookupP50Us, double lookupP99Us, double rawRttP50Us, double rawRttP99Us,
                             double storeOpsPerS, double retrieveOpsPerS, double storeControlOpsPerS,
                             double retrieveControlOpsPerS, double poolWriteGbps, double poolReadGbps, double memcpyGbps) {
    }

    private MpBench() {
    }

    public static Result run(Settings s, PrintStream progress) {
        try (QuietLogs _ = QuietLogs.warningsOnly()) {
            return measure(s, progress);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (MpProtocolException e) {
            throw new IllegalStateException("a reply of the MP server does not decode: " + e.getMessage(), e);
        }
    }

    private static Result measure(Settings s, PrintStream progress) throws IOException, MpProtocolException {
        int[] tokens = new int[s.chunks() * s.tokens()];
        SplittableRandom random = new SplittableRandom(26);
        Arrays.setAll(tokens, i -> random.nextInt(128_000));
        long chunkBytes = s.chunkBytes();
        MpServerSettings serverSettings = MpServerSettings.loopback(s.poolBytes()).withPorts(0, -1)
                .withChunkSize(s.tokens());
        try (Arena arena = Arena.ofShared();
             MpServer server = MpServer.start(serverSettings);
             Echo echo = Echo.start();
             ZContext zmq = new OwnedZContext("bench-mp-bench", 1)) {
            MemorySegment source = arena.allocate(s.chunks() * chunkBytes, 64);
            MemorySegment target = arena.allocate(s.chunks() * chunkBytes, 64);
            fill(source, random);
            target.fill((byte) 0);
            Client mp = new Client(zmq, server.port());
            Client raw = new Client(zmq, echo.port());
            long instanceId = ProcessHandle.current().pid();
            RegisterEngineDrivenContextResponse registered = register(mp, s, instanceId);
            try (Arena poolArena = Arena.ofShared()) {
                MemorySegment pool = mapPool(registered, poolArena);
                Session session = new Session(s, server, mp, raw, instanceId, tokens, pool, source, target);
                List<RunFigures> runs = new ArrayList<>();
                long mismatched = 0;
                for (int run = -s.warmup(); run < s.runs(); run++) {
                    RunOutcome outcome = session.oneRun(run + s.warmup());
                    mismatched += outcome.mismatched();
                    if (run >= 0) {
                        RunFigures f = outcome.figures();
                        runs.add(f);
                        progress.printf(Locale.ROOT, "mp run %d: lookup p50 %.1f us (bare %.1f us), store %.1f/s"
                                        + " (control %.0f/s), retrieve %.1f/s (control %.0f/s), pool write %.2f GB/s,"
                                        + " read %.2f GB/s, memcpy %.2f GB/s%n", run + 1, f.lookupP50Us(), f.rawRttP50Us(),
                                f.storeOpsPerS(), f.storeControlOpsPerS(), f.retrieveOpsPerS(),
                                f.retrieveControlOpsPerS(), f.poolWriteGbps(), f.poolReadGbps(), f.memcpyGbps());
                    }
                }
                mp.call(MpOperation.UNREGISTER_KV_CACHE_ENGINE_DRIVEN_CONTEXT, MpScalars.encodeInt(instanceId));
                LowerTier l2 = lowerTier(s, serverSettings, zmq, raw, instanceId, tokens, source, target, progress);
                mismatched += l2.mismatched();
                return new Result(s, median(runs, RunFigures::lookupP50Us), median(runs, RunFigures::lookupP99Us),
                        median(runs, RunFigures::rawRttP50Us), median(runs, RunFigures::rawRttP99Us),
                        median(runs, RunFigures::storeOpsPerS), median(runs, RunFigures::retrieveOpsPerS),
                        median(runs, RunFigures::storeControlOpsPerS), median(runs, RunFigures::retrieveControlOpsPerS),
                        median(runs, RunFigures::poolWriteGbps), median(runs, RunFigures::poolReadGbps),
                        median(runs, RunFigures::memcpyGbps), l2.loadGbps(), l2.rawReadGbps(), registered.shmName(),
                        registered.poolSize(), 2L * (s.runs() + s.warmup()) * s.chunks(), mismatched, List.copyOf(runs));
            }
        }
    }

    private static RegisterEngineDrivenContextResponse register(Client mp, Settings s, long instanceId)
            throws MpProtocolException {
        RegisterEngineDrivenContextResponse registered = mp.register(RegisterEngineDrivenContextPayload.singleGroup(
                instanceId, MODEL, 1, 16, s.layers(), s.hidden(), "bfloat16", false));
        if (registered.error().isPresent()) {
            throw new IllegalStateException("the MP server refused the registration: " + registered.error().get());
        }
        return registered;
    }

    private record LowerTier(double loadGbps, double rawReadGbps, long mismatched) {
    }

    /**
     * The lower tier: a second server, with a disk tier in a temporary directory, stores the prompt
     * once and writes it through. Each run empties its pool, times the lookup that loads the prompt
     * back (lookup sent to the count of {@code query_prefetch_status} received), retrieves and checks
     * every chunk, then times a plain read of the same chunk files: both read the page cache, where
     * the files were just written.
     */
    private static LowerTier lowerTier(Settings s, MpServerSettings base, ZContext zmq, Client raw, long instanceId,
                                       int[] tokens, MemorySegment source, MemorySegment target, PrintStream progress)
            throws IOException, MpProtocolException {
        Path dir = Files.createTempDirectory("lmcache4j-bench-mp-l2");
        long bytes = s.chunks() * s.chunkBytes();
        MpServerSettings settings = base.withShmName(base.shmName() + "-l2").withL2(MpL2Settings.NONE.withDisk(dir,
                2 * bytes + (64L << 20))
                .withStaging(8 * s.chunkBytes(), 1024)); // half for loads: the chunk copied and two read ahead
        try (MpServer server = MpServer.start(settings); Arena poolArena = Arena.ofShared()) {
            Client mp = new Client(zmq, server.port());
            Session session = new Session(s, server, mp, raw, instanceId, tokens,
                    mapPool(register(mp, s, instanceId), poolArena), source, target);
            session.store(new long[1]);
            awaitWrittenThrough(server, s.chunks());
            List<Double> loads = new ArrayList<>();
            List<Double> reads = new ArrayList<>();
            long mismatched = 0;
            for (int run = -s.warmup(); run < s.runs(); run++) {
                server.clear();
                double load = session.gbps(session.loadFromLowerTier());
                target.fill((byte) 0);
                session.retrieve(true, new long[1]);
                mismatched += session.verify();
                double read = rawRead(dir);
                if (run >= 0) {
                    loads.add(load);
                    reads.add(read);
                    progress.printf(Locale.ROOT, "mp L2 run %d: load from disk into the pool %.2f GB/s, plain read of the"
                            + " files %.2f GB/s%n", run + 1, load, read);
                }
            }
            mp.call(MpOperation.UNREGISTER_KV_CACHE_ENGINE_DRIVEN_CONTEXT, MpScalars.encodeInt(instanceId));
            return new LowerTier(median(loads), median(reads), mismatched);
        } finally {
            BenchFiles.deleteTree(dir);
        }
    }

    private static void awaitWrittenThrough(MpServer server, int chunks) {
        long deadline = System.nanoTime() + 120_000_000_000L;
        while (server.status().l2().tierWrites() < chunks) {
            if (System.nanoTime() - deadline > 0) {
                throw new IllegalStateException("the disk tier wrote " + server.status().l2() + " of " + chunks + " chunks");
            }
            LockSupport.parkNanos(1_000_000);
        }
    }

    /** Every chunk file under {@code dir} read whole into one direct buffer: GB/s of the files' bytes. */
    private static double rawRead(Path dir) throws IOException {
        List<Path> files;
        try (var walk = Files.walk(dir)) {
            files = walk.filter(Files::isRegularFile).filter(p -> p.toString().endsWith(".lmc")).toList();
        }
        long largest = 0;
        for (Path f : files) {
            largest = Math.max(largest, Files.size(f));
        }
        ByteBuffer buffer = ByteBuffer.allocateDirect((int) largest);
        long total = 0;
        long t0 = System.nanoTime();
        for (Path f : files) {
            try (FileChannel ch = FileChannel.open(f, StandardOpenOption.READ)) {
                buffer.clear();
                while (buffer.hasRemaining() && ch.read(buffer) >= 0) {
                    // read the whole file
                }
                total += buffer.position();
            }
        }
        return total / (double) (System.nanoTime() - t0);
    }

    /** The pool a worker opens: {@code /dev/shm/<shm_name>}, mapped read-write at the size the server named. */
    private static MemorySegment mapPool(RegisterEngineDrivenContextResponse registered, Arena arena) throws IOException {
        Path path = Path.of("/dev/shm", registered.shmName().startsWith("/") ? registered.shmName().substring(1)
                : registered.shmName());
        try (FileChannel channel = FileChannel.open(path, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            return channel.map(FileChannel.MapMode.READ_WRITE, 0, registered.poolSize(), arena);
        }
    }

    private static void fill(MemorySegment segment, SplittableRandom random) {
        for (long at = 0; at + 8 <= segment.byteSize(); at += 8) {
            segment.set(ValueLayout.JAVA_LONG_UNALIGNED, at, random.nextLong());
        }
    }

    private record RunOutcome(RunFigures figures, long mismatched) {
    }

    /** The client's side of every run: one registered worker (rank 0 of 1), the prompt, its buffers. */
    private static final class Session {
        private final Settings s;
        private final MpServer server;
        private final Client mp;
        private final Client raw;
        private final long instanceId;
        private final int[] tokens;
        private final MemorySegment pool;
        private final MemorySegment source;
        private final MemorySegment target;
        private final byte[] instanceFrame;
        private long requests;

        Session(Settings s, MpServer server, Client mp, Client raw, long instanceId, int[] tokens, MemorySegment pool,
                MemorySegment source, MemorySegment target) {
            this.s = s;
            this.server = server;
            this.mp = mp;
            this.raw = raw;
            this.instanceId = instanceId;
            this.tokens = tokens;
            this.pool = pool;
            this.source = source;
            this.target = target;
            this.instanceFrame = MpScalars.encodeInt(instanceId);
        }

        RunOutcome oneRun(int runIndex) throws MpProtocolException {
            stamp(runIndex);
            double memcpy = memcpy();
            server.clear();
            double storeControl = chunks() / seconds(store(null));
            server.clear();
            long[] copyNanos = new long[1];
            double store = chunks() / seconds(store(copyNanos));
            double poolWrite = gbps(copyNanos[0]);
            double[] lookup = new double[s.lookups()];
            double[] bare = new double[s.lookups()];
            roundTrips(lookup, bare);
            target.fill((byte) 0);
            copyNanos[0] = 0;
            double retrieve = chunks() / seconds(retrieve(true, copyNanos));
            double poolRead = gbps(copyNanos[0]);
            long mismatched = verify();
            double retrieveControl = chunks() / seconds(retrieve(false, new long[1]));
            Arrays.sort(lookup);
            Arrays.sort(bare);
            return new RunOutcome(new RunFigures(percentile(lookup, 0.50), percentile(lookup, 0.99),
                    percentile(bare, 0.50), percentile(bare, 0.99), store, retrieve, storeControl, retrieveControl,
                    poolWrite, poolRead, memcpy), mismatched);
        }

        private double chunks() {
            return s.chunks();
        }

        private double gbps(long nanos) {
            return s.chunks() * (double) s.chunkBytes() / nanos;
        }

        /** A run-specific long on every page of every source chunk: a stale slot cannot pass verification. */
        private void stamp(int runIndex) {
            for (long at = 0; at + 8 <= source.byteSize(); at += STAMP_STRIDE) {
                source.set(ValueLayout.JAVA_LONG_UNALIGNED, at, mix(runIndex, at));
            }
        }

        /** The baseline: the same bytes, chunk by chunk, between two private off-heap buffers. */
        private double memcpy() {
            long chunk = s.chunkBytes();
            long t0 = System.nanoTime();
            for (int i = 0; i < s.chunks(); i++) {
                MemorySegment.copy(source, i * chunk, target, i * chunk, chunk);
            }
            return gbps(System.nanoTime() - t0);
        }

        private IpcCacheServerKey key(int chunk, String requestId, boolean worker) {
            int start = chunk * s.tokens();
            return new IpcCacheServerKey(MODEL, 1, worker ? OptionalInt.of(0) : OptionalInt.empty(), tokens, start,
                    start + s.tokens(), requestId, "", 0);
        }

        private String nextRequestId(String kind) {
            return "bench-mp-" + kind + "-" + requests++;
        }

        /**
         * prepare_store, the copy into the slot (when {@code copyNanos} is given; the copies' time is
         * added to it) and commit_store of every chunk; the whole pass's nanoseconds. Without the copy
         * it is the control path alone (the committed slots then hold stale bytes, cleared next).
         */
        private long store(long[] copyNanos) throws MpProtocolException {
            String requestId = nextRequestId("store");
            long chunk = s.chunkBytes();
            long t0 = System.nanoTime();
            for (int i = 0; i < s.chunks(); i++) {
                byte[] key = MpKeyCodec.encode(key(i, requestId, true), MpSchema.BASE);
                PrepareStoreResponse prepared = MpTransferCodec.decodeStore(
                        mp.call(MpOperation.PREPARE_STORE, key, instanceFrame).result());
                List<ShmSlot> slots = prepared.context().slots().orElse(List.of());
                if (slots.size() != 1 || slots.getFirst().length() != chunk) {
                    throw new IllegalStateException("prepare_store of chunk " + i + " gave " + slots.size()
                            + " slots (expected one of " + chunk + " bytes; is the pool full?)");
                }
                if (copyNanos != null) {
                    long c0 = System.nanoTime();
                    MemorySegment.copy(source, i * chunk, pool, slots.getFirst().offset(), chunk);
                    copyNanos[0] += System.nanoTime() - c0;
                }
                byte[] committed = mp.call(MpOperation.COMMIT_STORE, key, instanceFrame, MpScalars.encodeBytes(new byte[0]))
                        .result();
                if (!MpScalars.decodeBool(committed, "commit_store result")) {
                    throw new IllegalStateException("commit_store of chunk " + i + " answered false");
                }
            }
            long nanos = System.nanoTime() - t0;
            mp.call(MpOperation.END_SESSION, MpScalars.encodeString(requestId));
            return nanos;
        }

        /**
         * The scheduler's lookup of the whole prompt (untimed; it takes the read locks), then
         * prepare_retrieve, the copy out of the slot (when {@code copy}) and commit_retrieve of every
         * chunk; the per-chunk pass's nanoseconds.
         */
        private long retrieve(boolean copy, long[] copyNanos) throws MpProtocolException {
            String requestId = nextRequestId("retrieve");
            lookupAll(requestId);
            long chunk = s.chunkBytes();
            long t0 = System.nanoTime();
            for (int i = 0; i < s.chunks(); i++) {
                byte[] key = MpKeyCodec.encode(key(i, requestId, true), MpSchema.BASE);
                PrepareRetrieveResponse prepared = MpTransferCodec.decodeRetrieve(
                        mp.call(MpOperation.PREPARE_RETRIEVE, key, instanceFrame).result());
                List<ShmSlot> slots = prepared.context().slots().orElse(List.of());
                if (!prepared.success() || slots.size() != 1 || slots.getFirst().length() != chunk) {
                    throw new IllegalStateException("prepare_retrieve of chunk " + i + " failed (success "
                            + prepared.success() + ", " + slots.size() + " slots)");
                }
                if (copy) {
                    long c0 = System.nanoTime();
                    MemorySegment.copy(pool, slots.getFirst().offset(), target, i * chunk, chunk);
                    copyNanos[0] += System.nanoTime() - c0;
                }
                mp.call(MpOperation.COMMIT_RETRIEVE, key, instanceFrame);
            }
            long nanos = System.nanoTime() - t0;
            mp.call(MpOperation.END_SESSION, MpScalars.encodeString(requestId));
            return nanos;
        }

        /**
         * After the pool was emptied: the scheduler's lookup of the whole prompt, which loads it from
         * the lower tier, then wait_prefetch_status until the count comes (every chunk); its locks
         * are then freed. The nanoseconds from the lookup to the count.
         */
        private long loadFromLowerTier() throws MpProtocolException {
            String requestId = nextRequestId("load");
            byte[] key = MpKeyCodec.encode(new IpcCacheServerKey(MODEL, 1, OptionalInt.empty(), tokens, 0,
                    tokens.length, requestId, "", 0), MpSchema.BASE);
            byte[] request = MpScalars.encodeString(requestId);
            long t0 = System.nanoTime();
            mp.call(MpOperation.LOOKUP, key, MpScalars.encodeInt(1));
            // One wait, answered when the load ends: polling would take the cores the load runs on.
            List<byte[]> status = mp.call(MpOperation.WAIT_PREFETCH_STATUS, request, MpScalars.encodeFloat(60.0)).frames();
            long nanos = System.nanoTime() - t0;
            if (status.isEmpty()) {
                throw new IllegalStateException("the load from the lower tier did not end within 60 s");
            }
            long hits = MpScalars.decodeInt(status.getFirst(), "query_prefetch_status result", 0, Long.MAX_VALUE);
            if (hits != s.chunks()) {
                throw new IllegalStateException("the load from the lower tier found " + hits + " of " + s.chunks() + " chunks");
            }
            mp.call(MpOperation.FREE_LOOKUP_LOCKS, key, MpScalars.encodeInt(1));
            mp.call(MpOperation.END_SESSION, request);
            return nanos;
        }

        /** lookup + query_prefetch_status of the whole prompt; every chunk must be found. */
        private void lookupAll(String requestId) throws MpProtocolException {
            byte[] key = MpKeyCodec.encode(new IpcCacheServerKey(MODEL, 1, OptionalInt.empty(), tokens, 0,
                    tokens.length, requestId, "", 0), MpSchema.BASE);
            mp.call(MpOperation.LOOKUP, key, MpScalars.encodeInt(1));
            long hits = MpScalars.decodeInt(mp.call(MpOperation.QUERY_PREFETCH_STATUS, MpScalars.encodeString(requestId))
                    .result(), "query_prefetch_status result", 0, Long.MAX_VALUE);
            if (hits != s.chunks()) {
                throw new IllegalStateException("the lookup found " + hits + " of " + s.chunks() + " stored chunks");
            }
        }

        /**
         * Alternates the timed {@code lookup} round trip (a new request id each time) with a bare echo
         * of the same frames; between them, untimed, the hit count is read and the locks freed.
         */
        private void roundTrips(double[] lookupUs, double[] bareUs) throws MpProtocolException {
            byte[] tp = MpScalars.encodeInt(1);
            for (int i = 0; i < lookupUs.length; i++) {
                String requestId = nextRequestId("lookup");
                byte[] key = MpKeyCodec.encode(new IpcCacheServerKey(MODEL, 1, OptionalInt.empty(), tokens, 0,
                        tokens.length, requestId, "", 0), MpSchema.BASE);
                Reply looked = mp.call(MpOperation.LOOKUP, key, tp);
                lookupUs[i] = looked.nanos() / 1e3;
                Reply echoed = raw.call(MpOperation.LOOKUP, key, tp);
                bareUs[i] = echoed.nanos() / 1e3;
                long hits = MpScalars.decodeInt(mp.call(MpOperation.QUERY_PREFETCH_STATUS,
                        MpScalars.encodeString(requestId)).result(), "query_prefetch_status result", 0, Long.MAX_VALUE);
                if (hits != s.chunks()) {
                    throw new IllegalStateException("lookup " + i + " found " + hits + " of " + s.chunks() + " chunks");
                }
                mp.call(MpOperation.FREE_LOOKUP_LOCKS, key, tp);
                mp.call(MpOperation.END_SESSION, MpScalars.encodeString(requestId));
            }
        }

        /** Chunks whose retrieved bytes differ from the stored ones. */
        private long verify() {
            long chunk = s.chunkBytes();
            long mismatched = 0;
            for (int i = 0; i < s.chunks(); i++) {
                if (source.asSlice(i * chunk, chunk).mismatch(target.asSlice(i * chunk, chunk)) != -1) {
                    mismatched++;
                }
            }
            return mismatched;
        }
    }

    private static long mix(long run, long at) {
        long z = run * 0x9E3779B97F4A7C15L + at + 0x632BE59BD9B4E019L;
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    private static double seconds(long nanos) {
        return nanos / 1e9;
    }

    /** Nearest-rank percentile of sorted values. */
    static double percentile(double[] sorted, double p) {
        int rank = (int) Math.ceil(p * sorted.length);
        return sorted[Math.max(0, Math.min(sorted.length - 1, rank - 1))];
    }

    private static double median(List<RunFigures> runs, ToDoubleFunction<RunFigures> figure) {
        return median(runs.stream().map(figure::applyAsDouble).toList());
    }

    private static double median(List<Double> values) {
        double[] v = values.stream().mapToDouble(Double::doubleValue).sorted().toArray();
        return v.length % 2 == 1 ? v[v.length / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
    }

    /** A reply's frames after {@code [uid, op]} and the round trip's nanoseconds. */
    private record Reply(List<byte[]> frames, long nanos) {
        /** The result frame; a call whose result is None has none. */
        byte[] result() {
            if (frames.isEmpty()) {
                throw new IllegalStateException("the reply has no result frame");
            }
            return frames.getFirst();
        }
    }

    /** One DEALER: one request at a time, its reply matched by uid and op, as LMCache's client does. */
    private static final class Client {
        private final ZMQ.Socket socket;
        private long uid;

        Client(ZContext context, int port) {
            socket = context.createSocket(SocketType.DEALER);
            socket.setLinger(0);
            socket.setReceiveTimeOut(REPLY_TIMEOUT_MS);
            socket.connect("tcp://127.0.0.1:" + port);
        }

        RegisterEngineDrivenContextResponse register(RegisterEngineDrivenContextPayload payload) throws MpProtocolException {
            return MpRegistrationCodec.decodeResponse(call(MpOperation.REGISTER_KV_CACHE_ENGINE_DRIVEN_CONTEXT,
                    MpRegistrationCodec.encodePayload(payload, MpSchema.BASE)).result());
        }

        Reply call(MpOperation op, byte[]... args) {
            byte[] uidFrame = MpScalars.encodeInt(uid++);
            byte[] opFrame = MpScalars.encodeInt(op.id());
            long t0 = System.nanoTime();
            socket.send(uidFrame, ZMQ.SNDMORE);
            socket.send(opFrame, args.length == 0 ? 0 : ZMQ.SNDMORE);
            for (int i = 0; i < args.length; i++) {
                socket.send(args[i], i == args.length - 1 ? 0 : ZMQ.SNDMORE);
            }
            List<byte[]> reply = new ArrayList<>(3);
            do {
                byte[] frame = socket.recv(0);
                if (frame == null) {
                    throw new IllegalStateException("no reply to " + op.wireName() + " within " + REPLY_TIMEOUT_MS
                            + " ms (the server dropped the request)");
                }
                reply.add(frame);
            } while (socket.hasReceiveMore());
            long nanos = System.nanoTime() - t0;
            if (reply.size() < 2 || !Arrays.equals(reply.get(0), uidFrame) || !Arrays.equals(reply.get(1), opFrame)) {
                throw new IllegalStateException("the reply to " + op.wireName() + " does not echo its uid and op");
            }
            return new Reply(reply.subList(2, reply.size()), nanos);
        }
    }

    /**
     * The baseline server: a ROUTER on its own loop thread answering each request with
     * {@code [identity, uid, op]}, the reply a {@code lookup} gets, and nothing else.
     */
    private static final class Echo implements AutoCloseable {
        private final ZContext context = new OwnedZContext("bench-mp-bench", 1);
        private final ZMQ.Socket router;
        private final int port;
        private final Thread loop;
        private volatile boolean running = true;

        private Echo() {
            router = context.createSocket(SocketType.ROUTER);
            router.setLinger(0);
            router.setReceiveTimeOut(20);
            port = router.bindToRandomPort("tcp://127.0.0.1");
            loop = Thread.ofPlatform().name("mp-bench-echo").daemon().unstarted(this::serve);
        }

        static Echo start() {
            Echo echo = new Echo();
            echo.loop.start();
            return echo;
        }

        int port() {
            return port;
        }

        private void serve() {
            List<byte[]> frames = new ArrayList<>(8);
            while (running) {
                byte[] first = router.recv(0);
                if (first == null) {
                    continue;
                }
                frames.clear();
                frames.add(first);
                while (router.hasReceiveMore()) {
                    frames.add(router.recv(0));
                }
                if (frames.size() >= 3) {
                    router.send(frames.get(0), ZMQ.SNDMORE);
                    router.send(frames.get(1), ZMQ.SNDMORE);
                    router.send(frames.get(2), 0);
                }
            }
        }

        @Override
        public void close() {
            running = false;
            try {
                loop.join(5_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            context.close();
        }
    }
}
