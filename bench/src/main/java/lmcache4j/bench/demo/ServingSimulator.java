package lmcache4j.bench.demo;

import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CancellationException;
import java.util.function.Consumer;

import lmcache4j.allocator.DType;
import lmcache4j.allocator.HostArenaOptions;
import lmcache4j.allocator.host.HostArena;
import lmcache4j.allocator.tensor.TensorMemoryAllocator;
import lmcache4j.engine.LMCacheEngine;
import lmcache4j.engine.ModelMetadata;
import lmcache4j.engine.PreparedRequest;
import lmcache4j.engine.config.ConfigLoader;
import lmcache4j.engine.config.LMCacheEngineConfig;
import lmcache4j.engine.connector.KvConnector;
import lmcache4j.engine.connector.PagedKvCache;
import lmcache4j.engine.connector.PagedLayout;
import lmcache4j.engine.metrics.MetricsSnapshot;
import lmcache4j.engine.remote.RemoteBackend;
import lmcache4j.engine.storage.cpu.LocalCpuBackend;
import lmcache4j.engine.storage.disk.LocalDiskBackend;
import lmcache4j.engine.storage.disk.RecoveryReport;

/**
 * A serving engine in miniature, driving an {@link LMCacheEngine} as vLLM's LMCache connector does.
 * It owns a paged KV cache in host memory (vLLM's FlashAttention layout) with a pool of free
 * blocks, and serves the {@link Workload}'s requests one after another:
 * <ol>
 *   <li>lookup of the prompt with a lookup id, which pins the cached prefix;</li>
 *   <li>a random block table for the whole sequence (prompt and answer) from the free blocks; the
 *       blocks that will receive cached KV are first filled with a poison pattern, so that stale
 *       KV left by an earlier request cannot pass for a correct retrieve;</li>
 *   <li>retrieve of the prompt (mask all true) naming the lookup id, which releases the pins;</li>
 *   <li>verification of every retrieved byte against {@link KvModel}'s recomputation, and of the
 *       retrieved token count against the lookup's (they agree: the pins prevent eviction in
 *       between);</li>
 *   <li>"prefill" of the rest of the prompt and "decode" of the answer: {@link KvModel#compute};</li>
 *   <li>store of prompt + answer (mask null; chunks already cached are skipped by the engine);</li>
 *   <li>the blocks go back to the pool.</li>
 * </ol>
 * The CPU tier is small next to the workload's KV, so the engine evicts (LRU) as it goes. With a
 * disk tier ({@code local_disk}, O_DIRECT where the file system allows it) below it, every stored
 * chunk is also written to disk in the background, and a chunk the CPU tier has evicted is read
 * back from disk (through the CPU tier) instead of being recomputed. Chunks left on disk by an
 * earlier run in the same directory are recovered at start and served too.
 */
public final class ServingSimulator implements AutoCloseable {
    static final DType DTYPE = DType.BFLOAT16;
    static final PagedLayout LAYOUT = PagedLayout.FLASH_ATTENTION;
    static final byte POISON = (byte) 0xA5;
    /** The paged cache has this many times the blocks the longest request needs, so block tables are scattered. */
    static final double PAGED_HEADROOM = 1.5;

    /**
     * The demo's knobs.
     *
     * @param requests  requests to serve
     * @param cpuGb     the CPU tier ({@code max_local_cpu_size}, GiB as in LMCache)
     * @param layers    attention layers
     * @param kvHeads   KV heads
     * @param headSize  elements per head
     * @param blockSize tokens per paged-cache block
     * @param chunkSize tokens per engine chunk
     * @param seed      the workload's (and block tables') random seed
     * @param workload  the workload's shape
     * @param diskDir   the disk tier's directory ({@code local_disk}), or null for no disk tier
     * @param diskGb    the disk tier's size ({@code max_local_disk_size}, GiB); ignored without a directory
     * @param remoteUrl the remote tier's {@code remote_url}, or null for none
     * @param controller the cache controller the engine reports its chunks to, or null for none
     */
    public record Settings(int requests, double cpuGb, int layers, int kvHeads, int headSize, int blockSize,
                           int chunkSize, long seed, Workload.Shape workload, Path diskDir, double diskGb,
                           String remoteUrl, ControllerLink controller) {
        public static final int DEFAULT_REQUESTS = 240;
        public static final double DEFAULT_CPU_GB = 1.0;
        public static final int DEFAULT_LAYERS = 8;
        public static final int DEFAULT_KV_HEADS = 8;
        public static final int DEFAULT_HEAD_SIZE = 128;
        public static final int DEFAULT_BLOCK_SIZE = 16;
        public static final int DEFAULT_CHUNK_SIZE = 256;
        public static final long DEFAULT_SEED = 42;
        /**
         * The engines' {@code hash_seed}: one for every demo whatever its workload seed, so that demos with different
         * workloads reporting to one cache controller ({@code ./lmcache4j controller --hash-seed 0}) hash as it does.
         */
        public static final String HASH_SEED = "0";
        /** The disk tier: twice the CPU tier, less than the ~3 GiB the default workload stores with it, so it evicts too. */
        public static final double DEFAULT_DISK_GB = 2.0;

        public Settings {
            if (requests < 1) {
                throw new IllegalArgumentException("requests must be at least 1, was " + requests);
            }
            if (layers < 1 || kvHeads < 1 || headSize < 4 || headSize % 4 != 0 || blockSize < 1 || chunkSize < 1) {
                throw new IllegalArgumentException("layers, KV heads and block/chunk sizes must be positive and the head "
                        + "size a multiple of 4, got " + layers + ", " + kvHeads + ", " + headSize + ", " + blockSize + ", " + chunkSize);
            }
            if (!(cpuGb > 0) || cpuGb * (1L << 30) < chunkBytes(layers, kvHeads, headSize, chunkSize)) {
                throw new IllegalArgumentException("--cpu-gb " + cpuGb + " holds no chunk: one chunk of " + chunkSize
                        + " tokens is " + chunkBytes(layers, kvHeads, headSize, chunkSize) + " bytes with " + layers + " layers");
            }
            if (diskDir != null && (!(diskGb > 0) || diskGb * (1L << 30) < 4096 + chunkBytes(layers, kvHeads, headSize, chunkSize))) {
                throw new IllegalArgumentException("--disk-gb " + diskGb + " holds no chunk file: one chunk of " + chunkSize
                        + " tokens is " + chunkBytes(layers, kvHeads, headSize, chunkSize) + " bytes with " + layers + " layers");
            }
        }

        /** The same settings with a disk tier in {@code dir} of {@code gb} GiB (null: none). */
        public Settings withDisk(Path dir, double gb) {
            return new Settings(requests, cpuGb, layers, kvHeads, headSize, blockSize, chunkSize, seed, workload, dir, gb,
                    remoteUrl, controller);
        }

        /** The same settings with a remote tier at {@code url} (null: none). */
        public Settings withRemote(String url) {
            return new Settings(requests, cpuGb, layers, kvHeads, headSize, blockSize, chunkSize, seed, workload, diskDir,
                    diskGb, url, controller);
        }

        /** The same settings reporting to the cache controller {@code link} (null: none). */
        public Settings withController(ControllerLink link) {
            return new Settings(requests, cpuGb, layers, kvHeads, headSize, blockSize, chunkSize, seed, workload, diskDir,
                    diskGb, remoteUrl, link);
        }

        public boolean hasDisk() {
            return diskDir != null;
        }

        public static Settings defaults() {
            return new Settings(DEFAULT_REQUESTS, DEFAULT_CPU_GB, DEFAULT_LAYERS, DEFAULT_KV_HEADS, DEFAULT_HEAD_SIZE,
                    DEFAULT_BLOCK_SIZE, DEFAULT_CHUNK_SIZE, DEFAULT_SEED, Workload.Shape.defaults(DEFAULT_SEED), null,
                    DEFAULT_DISK_GB, null, null);
        }

        public ModelMetadata metadata() {
            return new ModelMetadata("lmcache4j/demo-" + layers + "L-" + kvHeads + "x" + headSize, 1, 0, DTYPE,
                    layers, kvHeads, headSize, false);
        }

        /** Bytes of one full chunk. */
        public long chunkBytes() {
            return chunkBytes(layers, kvHeads, headSize, chunkSize);
        }

        /** Bytes of KV per token. */
        public long bytesPerToken() {
            return 2L * layers * kvHeads * headSize * DTYPE.byteSize();
        }

        /** Blocks in the paged cache. */
        public int pagedBlocks() {
            int longest = (workload.maxTokens() + blockSize - 1) / blockSize;
            return (int) Math.ceil(longest * PAGED_HEADROOM);
        }

        private static long chunkBytes(int layers, int kvHeads, int headSize, int chunkSize) {
            return 2L * layers * chunkSize * kvHeads * headSize * DTYPE.byteSize();
        }
    }

    /**
     * Sees the paged cache between a request's retrieve and the verification of what it loaded:
     * tests damage retrieved KV there to prove that the verification catches it.
     */
    @FunctionalInterface
    public interface AfterRetrieve {
        AfterRetrieve NOTHING = (kv, slots, retrievedTokens) -> { };

        /** {@code slots[0..retrievedTokens)} hold the KV the engine just loaded. */
        void retrieved(PagedKvCache kv, long[] slots, int retrievedTokens);
    }

    /** Told after each request; for a progress bar. */
    @FunctionalInterface
    public interface Progress {
        void update(int done, int total, long promptTokens, long reusedTokens);
    }

    /**
     * The cache controller an engine reports to, in LMCache's terms.
     *
     * @param pullUrl    {@code controller_pull_url}: HOST:PORT of the controller's PULL socket
     * @param replyUrl   {@code controller_reply_url}: HOST:PORT of its ROUTER socket (registration, full sync)
     * @param instanceId {@code lmcache_instance_id}: the name lookups answer with
     * @param secretFile {@code deployment_secret_file}: the deployment secret, when the controller has one
     */
    public record ControllerLink(String pullUrl, String replyUrl, String instanceId, Optional<String> secretFile) {
        public ControllerLink {
            Objects.requireNonNull(secretFile, "secretFile");
            requireHostPort("the controller's pull address", pullUrl);
            requireHostPort("the controller's reply address", replyUrl);
            if (instanceId == null || instanceId.isBlank()) {
                throw new IllegalArgumentException("an instance id must not be blank");
            }
        }

        private static void requireHostPort(String what, String value) {
            int colon = value == null ? -1 : value.lastIndexOf(':');
            boolean ok = colon > 0;
            if (ok) {
                try {
                    int port = Integer.parseInt(value.substring(colon + 1));
                    ok = port >= 1 && port <= 65_535;
                } catch (NumberFormatException e) {
                    ok = false;
                }
            }
            if (!ok) {
                throw new IllegalArgumentException(what + " must be HOST:PORT (port 1-65535), got '" + value + "'");
            }
        }
    }

    private final Settings settings;
    private final Workload workload;
    private final HostArena pagedMemory;
    private final PagedKvCache kv;
    private final BlockPool blocks;
    private final LMCacheEngine engine;
    /** How the engine copies: the connector, its threads and whether it writes with streaming stores. */
    private final String copies;
    private final Optional<LocalDiskBackend> disk;
    private final Optional<RemoteBackend> remote;
    private final long bytesPerToken;
    private final AfterRetrieve afterRetrieve;
    private final Tally tally = new Tally();
    private int[] lastPrompt = new int[0];

    /** What has been counted so far. */
    static final class Tally {
        final Map<Workload.Kind, Integer> kinds = new EnumMap<>(Workload.Kind.class);
        long promptTokens;
        long reusedTokens;
        long computedTokens;
        long storedTokens;
        long lookupHitTokens;
        int requestsWithHit;
        int disagreements;
        long shortfallTokens;
        int maskHoles;
        int beyondLookup;
        long verifiedBytes;
        long mismatchingBytes;
        final List<String> problems = new ArrayList<>();
        long lookupNanos;
        long poisonNanos;
        long retrieveNanos;
        long verifyNanos;
        long computeNanos;
        long storeNanos;
    }

    public ServingSimulator(Settings settings) {
        this(settings, AfterRetrieve.NOTHING);
    }

    /** A simulator that shows the paged cache to {@code afterRetrieve} after every retrieve, before verifying it. */
    public ServingSimulator(Settings settings, AfterRetrieve afterRetrieve) {
        this(settings, afterRetrieve, builder -> { });
    }

    /**
     * A simulator whose engine config gets, after the settings' own entries, what {@code moreConfig} sets (the
     * multi-instance demo's lookup service and P2P entries).
     */
    public ServingSimulator(Settings settings, AfterRetrieve afterRetrieve, Consumer<ConfigLoader.Builder> moreConfig) {
        this.settings = settings;
        this.afterRetrieve = Objects.requireNonNull(afterRetrieve, "afterRetrieve");
        this.workload = new Workload(settings.workload());
        this.bytesPerToken = settings.bytesPerToken();
        int numBlocks = settings.pagedBlocks();
        long layerBytes = PagedKvCache.layerBytes(LAYOUT, numBlocks, settings.blockSize(), settings.kvHeads(),
                settings.headSize(), DTYPE);
        this.pagedMemory = HostArena.allocate(layerBytes * settings.layers(), hostOptions());
        try {
            List<MemorySegment> layers = new ArrayList<>();
            for (int l = 0; l < settings.layers(); l++) {
                layers.add(pagedMemory.segment().asSlice(l * layerBytes, layerBytes));
            }
            this.kv = new PagedKvCache(layers, LAYOUT, numBlocks, settings.blockSize(), settings.kvHeads(),
                    settings.headSize(), DTYPE);
            this.blocks = new BlockPool(numBlocks, settings.seed() ^ 0x5EED);
            ConfigLoader.Builder builder = ConfigLoader.builder().environment(Map.of())
                    .set("chunk_size", settings.chunkSize())
                    .set("max_local_cpu_size", settings.cpuGb())
                    .set("hash_seed", Settings.HASH_SEED);
            if (settings.hasDisk()) {
                // O_DIRECT is asked for; the tier falls back to buffered I/O by itself where the file system refuses it.
                builder.set("local_disk", settings.diskDir().toAbsolutePath().toString())
                        .set("max_local_disk_size", settings.diskGb())
                        .set("extra_config", Map.of("use_odirect", true));
            }
            if (settings.remoteUrl() != null) {
                builder.set("remote_url", settings.remoteUrl());
            }
            if (settings.controller() != null) {
                ControllerLink c = settings.controller();
                builder.set("enable_controller", true)
                        .set("controller_pull_url", c.pullUrl())
                        .set("controller_reply_url", c.replyUrl())
                        .set("lmcache_instance_id", c.instanceId());
                c.secretFile().ifPresent(f -> builder.set("deployment_secret_file", f));
            }
            moreConfig.accept(builder);
            LMCacheEngineConfig config = builder.build();
            KvConnector connector = KvConnector.host(config);
            this.copies = "host connector, " + connector.copyThreads() + " copy thread(s), streaming stores "
                    + connector.streamingStores();
            this.engine = LMCacheEngine.create(config, settings.metadata(), connector, List.of());
            this.remote = engine.storage().tier(RemoteBackend.NAME).map(RemoteBackend.class::cast);
            this.disk = engine.storage().tier(LocalDiskBackend.NAME).map(LocalDiskBackend.class::cast);
        } catch (RuntimeException e) {
            pagedMemory.close();
            throw e;
        }
    }

    /** Host memory for the simulator's own buffers: page-aligned mmap with huge page advice, as the CPU tier's. */
    static HostArenaOptions hostOptions() {
        return HostArenaOptions.DEFAULT.withCudaPinned(false).withHugePages(true);
    }

    public Settings settings() {
        return settings;
    }

    public PagedKvCache pagedCache() {
        return kv;
    }

    /** Bytes of the paged cache, every layer. */
    public long pagedBytes() {
        return pagedMemory.byteSize();
    }

    /**
     * Serves every request, measures memcpy, and reports.
     *
     * @throws CancellationException when the calling thread is interrupted (a stopped demo): it stops
     *                               between two requests, so the engine closes cleanly after it
     */
    public DemoReport run(Progress progress) {
        long started = System.nanoTime();
        MetricsSnapshot tierFull = null;
        int tierFullAt = -1;
        for (int i = 0; i < settings.requests(); i++) {
            if (Thread.currentThread().isInterrupted()) {
                throw new CancellationException("stopped after " + i + " of " + settings.requests() + " requests");
            }
            serve(workload.next());
            if (tierFull == null && engine.storage().cpu().evictions() > 0) {
                // The tier has had to evict: all of its memory has been written once, so page faults are over.
                tierFull = engine.metrics().snapshot();
                tierFullAt = i + 1;
            }
            progress.update(i + 1, settings.requests(), tally.promptTokens, tally.reusedTokens);
        }
        long wallNanos = System.nanoTime() - started;
        MetricsSnapshot m = engine.metrics().snapshot();
        // The disk writes still queued finish now (closing the engine would wait for them too), so
        // that the report counts them and a next run with the same directory finds them.
        long drainStarted = System.nanoTime();
        Optional<DemoReport.Disk> diskReport = disk.map(this::drainAndReport);
        Optional<DemoReport.Remote> remoteReport = remote.map(this::remoteReport);
        long drainNanos = System.nanoTime() - drainStarted;
        double storeSteadyGbps = tierFull == null ? Double.NaN
                : copyGbps(tierFull.storedBytes(), tierFull.storeGbps(), m.storedBytes(), m.storeGbps());
        long memcpyBytes = Math.max(m.storedBytes(), settings.chunkBytes());
        MemcpyBaseline.Result chunkCopy;
        MemcpyBaseline.Result blockCopy;
        long memcpyStarted = System.nanoTime();
        try (MemcpyBaseline memcpy = new MemcpyBaseline(memcpyBytes, hostOptions())) {
            chunkCopy = memcpy.measure(memcpyBytes, settings.chunkBytes());
            blockCopy = memcpy.measure(memcpyBytes, settings.blockSize() * kv.vectorBytes());
        }
        long memcpyNanos = System.nanoTime() - memcpyStarted;
        boolean engineHealthy = engine.health() == 0;
        long cpuBytes = engine.storage().memoryCapacityBytes();
        return new DemoReport(settings, workload.conversationsStarted(), workload.sharedTokens(), kv.numBlocks(),
                pagedMemory.byteSize(), cpuBytes,
                LocalCpuBackend.chunkBudget(cpuBytes, settings.chunkBytes(), TensorMemoryAllocator.DEFAULT_ALIGNMENT),
                new EnumMap<>(tally.kinds), tally.promptTokens, tally.reusedTokens, tally.computedTokens,
                tally.storedTokens, tally.lookupHitTokens, tally.requestsWithHit, tally.disagreements, tally.shortfallTokens,
                tally.maskHoles, engineHealthy, tally.beyondLookup,
                tally.verifiedBytes, tally.mismatchingBytes, List.copyOf(tally.problems),
                m.storeGbps(), m.retrieveGbps(), storeSteadyGbps, tierFullAt,
                gbps(tally.storedTokens * bytesPerToken, tally.storeNanos),
                gbps(tally.reusedTokens * bytesPerToken, tally.retrieveNanos),
                m.storedBytes(), m.retrievedBytes(), chunkCopy, blockCopy,
                m.localCpuEvictions(), m.localCpuEvictionFailures(), m.hotCacheCount(), m.localCacheUsageBytes(),
                m.requestedTokens() == 0 ? 0 : m.hitTokens() / (double) m.requestedTokens(),
                new DemoReport.Phases(tally.lookupNanos, tally.poisonNanos, tally.retrieveNanos, tally.verifyNanos,
                        tally.computeNanos, tally.storeNanos, wallNanos, memcpyNanos, drainNanos),
                diskReport.orElse(null), remoteReport.orElse(null), controllerReport().orElse(null));
    }

    /** How long the report waits for the controller link to register and push what is queued. */
    private static final long CONTROLLER_SETTLE_NANOS = 10_000_000_000L;

    /**
     * The controller link's counters, after waiting (at most {@link #CONTROLLER_SETTLE_NANOS}) for it to register and
     * to push every queued report, so that the controller holds what this run cached when the report says so.
     */
    private Optional<DemoReport.Controller> controllerReport() {
        return engine.controllerWorker().map(worker -> {
            long deadline = System.nanoTime() + CONTROLLER_SETTLE_NANOS;
            while (System.nanoTime() - deadline < 0 && !(worker.registered() && drained(worker.counters()))) {
                try {
                    Thread.sleep(20);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    break;
                }
            }
            Map<String, Long> c = worker.counters();
            ControllerLink link = settings.controller();
            return new DemoReport.Controller(link.pullUrl() + "," + link.replyUrl(), link.instanceId(), worker.registered(),
                    c.getOrDefault("lmcache:controller_ops_reported", 0L), c.getOrDefault("lmcache:controller_ops_dropped", 0L),
                    c.getOrDefault("lmcache:controller_full_syncs", 0L), link.secretFile().isPresent());
        });
    }

    /** Every report queued so far was pushed, dropped, or left out while unregistered (a full sync covers those). */
    private static boolean drained(Map<String, Long> c) {
        return c.getOrDefault("lmcache:controller_ops_queued", 0L) <= c.getOrDefault("lmcache:controller_ops_reported", 0L)
                + c.getOrDefault("lmcache:controller_ops_unregistered", 0L);
    }

    /**
     * The prompt of the last request served: its chunks were stored last, so a lookup of it names this engine while the
     * engine is up (what {@code demo --prompt-out} writes for a router's lookup).
     */
    public int[] lastPrompt() {
        return lastPrompt.clone();
    }

    private DemoReport.Remote remoteReport(RemoteBackend tier) {
        try {
            tier.awaitPuts(); // a next process sharing the remote should find everything this one stored
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while waiting for the remote tier's writes", e);
        }
        RemoteBackend.Stats st = tier.stats();
        return new DemoReport.Remote(tier.url(), st.puts(), st.putBytes(), st.failedPuts(), st.droppedPuts(),
                st.gets(), st.getBytes(), st.timeouts() + st.failures(), st.health());
    }

    private DemoReport.Disk drainAndReport(LocalDiskBackend tier) {
        try {
            tier.awaitPuts();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while waiting for the disk tier's writes", e);
        }
        LocalDiskBackend.Stats st = tier.stats();
        RecoveryReport recovery = tier.recovery();
        return new DemoReport.Disk(settings.diskDir().toAbsolutePath(), st.capacityBytes(), recovery.chunks().size(),
                recovery.totalBytes(), st.writes(), st.reads(), st.evictions(), st.droppedPuts(), st.rejectedPuts(),
                st.ioFailures(), st.corruptReads(), st.chunks(), st.usedBytes(), st.directIo(),
                recovery.removedCorrupt() + st.corruptOnVerify(), recovery.foreign(),
                recovery.foreign() > 0 ? recovery.foreignSummary() : "");
    }

    /** Chunks recovered from the disk directory at start (0 without a disk tier). */
    public int recoveredChunks() {
        return disk.map(d -> d.recovery().chunks().size()).orElse(0);
    }

    /** Bytes of the chunks recovered from the disk directory at start. */
    public long recoveredBytes() {
        return disk.map(d -> d.recovery().totalBytes()).orElse(0L);
    }

    /** Whether the disk tier transfers with O_DIRECT (false without one). */
    public boolean diskDirectIo() {
        return disk.map(d -> d.stats().directIo()).orElse(false);
    }

    /**
     * The engine's copy-only bandwidth between two metric snapshots: the metrics hold cumulative bytes
     * and bytes ÷ copy time, so the interval's copy time is the difference of bytes ÷ GB/s.
     */
    public static double copyGbps(long bytesBefore, double gbpsBefore, long bytesAfter, double gbpsAfter) {
        double nanosBefore = bytesBefore == 0 ? 0 : bytesBefore / gbpsBefore;
        double nanos = (bytesAfter == 0 ? 0 : bytesAfter / gbpsAfter) - nanosBefore;
        return nanos <= 0 ? Double.NaN : (bytesAfter - bytesBefore) / nanos;
    }

    private void serve(Workload.Request r) {
        long t0 = System.nanoTime();
        // The prompt is hashed once, for the lookup and the retrieve.
        PreparedRequest prepared = engine.prepare(r.prompt(), Map.of());
        String lookupId = "request-" + r.index();
        int hit = engine.lookup(prepared, lookupId);
        tally.lookupNanos += System.nanoTime() - t0;
        serveLookedUp(r, prepared, hit, lookupId);
    }

    /**
     * Hashes a prompt for a request whose lookup comes from elsewhere (the lookup service): the engine learns its
     * chunks' folded hashes, which the scheduler's asynchronous lookup names.
     */
    public PreparedRequest admit(int[] prompt) {
        return engine.prepare(prompt, Map.of());
    }

    /**
     * Serves a request whose prompt was {@link #admit admitted} and looked up elsewhere: {@code hit} tokens were
     * found (and prefetched for {@code lookupId}, which the retrieve consumes). Poisons, retrieves, verifies every
     * retrieved byte, computes the rest and stores, as {@link #run} does for each request.
     *
     * @return the tokens retrieved
     */
    public int serveLookedUp(Workload.Request r, PreparedRequest prepared, int hit, String lookupId) {
        Tally t = tally;
        t.kinds.merge(r.kind(), 1, Integer::sum);
        int[] prompt = r.prompt();
        lastPrompt = prompt;
        int[] sequence = r.sequence();
        long[] hashes = KvModel.prefixHashes(sequence);
        t.promptTokens += prompt.length;
        long t1 = System.nanoTime();
        t.lookupHitTokens += hit;

        int[] table = blocks.allocate((sequence.length + settings.blockSize() - 1) / settings.blockSize());
        try {
            long[] slots = BlockPool.slots(table, settings.blockSize(), sequence.length);
            poison(table, hit);
            long t2 = System.nanoTime();
            t.poisonNanos += t2 - t1;

            boolean[] loaded = engine.retrieve(prepared, kv, slots, lookupId);
            long t3 = System.nanoTime();
            t.retrieveNanos += t3 - t2;

            int retrieved = 0;
            while (retrieved < loaded.length && loaded[retrieved]) {
                retrieved++;
            }
            for (int i = retrieved; i < loaded.length; i++) {
                if (loaded[i]) {
                    t.maskHoles++;
                    problem(r, "the retrieve's mask has a hole: token " + i + " loaded after the prefix ended at " + retrieved);
                    break;
                }
            }
            if (retrieved < hit) {
                t.disagreements++;
                t.shortfallTokens += hit - retrieved;
                problem(r, "lookup found " + hit + " cached tokens but retrieve loaded " + retrieved
                        + " (the lookup's pins should have kept them)");
            } else if (retrieved > hit) {
                // Not an error: a chunk whose disk write was still queued at lookup (evicted from the CPU tier,
                // not yet on disk) reached the disk in between. Its bytes are verified like the others.
                t.beyondLookup++;
            }
            t.reusedTokens += retrieved;
            if (retrieved > 0) {
                t.requestsWithHit++;
            }
            afterRetrieve.retrieved(kv, slots, retrieved);
            long bad = KvModel.mismatchingBytes(kv, hashes, slots, 0, retrieved);
            long t4 = System.nanoTime();
            t.verifyNanos += t4 - t3;
            t.verifiedBytes += retrieved * bytesPerToken;
            if (bad != 0) {
                t.mismatchingBytes += bad;
                problem(r, bad + " of the " + retrieved * bytesPerToken + " retrieved bytes differ from the model's KV");
            }

            KvModel.compute(kv, hashes, slots, retrieved, sequence.length);
            long t5 = System.nanoTime();
            t.computeNanos += t5 - t4;
            t.computedTokens += sequence.length - retrieved;

            t.storedTokens += engine.store(engine.prepare(sequence, Map.of()), kv, slots);
            t.storeNanos += System.nanoTime() - t5;
            return retrieved;
        } finally {
            blocks.free(table);
        }
    }

    /**
     * What this simulator has served so far.
     *
     * @param requests          requests served
     * @param promptTokens      prompt tokens
     * @param reusedTokens      prompt tokens retrieved instead of computed
     * @param lookupHitTokens   tokens the lookups promised
     * @param shortfalls        requests that retrieved less than their lookup promised
     * @param maskHoles         retrieves whose mask had a hole
     * @param verifiedBytes     retrieved bytes checked against the model
     * @param mismatchingBytes  of those, bytes that differed
     * @param problems          the first problems, described
     */
    public record Totals(int requests, long promptTokens, long reusedTokens, long lookupHitTokens, int shortfalls,
                         int maskHoles, long verifiedBytes, long mismatchingBytes, List<String> problems) {
    }

    /** The totals so far. */
    public Totals totals() {
        Tally t = tally;
        int requests = t.kinds.values().stream().mapToInt(Integer::intValue).sum();
        return new Totals(requests, t.promptTokens, t.reusedTokens, t.lookupHitTokens, t.disagreements, t.maskHoles,
                t.verifiedBytes, t.mismatchingBytes, List.copyOf(t.problems));
    }

    /** How the engine copies (for the report's header): connector, copy threads, streaming stores. */
    public String copies() {
        return copies;
    }

    /** The engine the simulator drives. */
    public LMCacheEngine engine() {
        return engine;
    }

    /** Fills the blocks that will receive the {@code tokens} cached tokens, every layer and plane. */
    private void poison(int[] table, int tokens) {
        int b = settings.blockSize();
        long runBytes = b * kv.vectorBytes();
        for (int i = 0; i < (tokens + b - 1) / b; i++) {
            long firstSlot = (long) table[i] * b;
            for (MemorySegment layer : kv.layers()) {
                for (int p = 0; p < LAYOUT.kvPlanes(); p++) {
                    layer.asSlice(kv.offset(p, firstSlot), runBytes).fill(POISON);
                }
            }
        }
    }

    private void problem(Workload.Request r, String what) {
        if (tally.problems.size() < 20) {
            tally.problems.add("request " + r.index() + " (" + r.subject() + ", " + r.prompt().length + " prompt tokens): " + what);
        }
    }

    private static double gbps(long bytes, long nanos) {
        return nanos == 0 ? 0 : bytes / (double) nanos;
    }

    /** Closes the engine (failing, with the list, if any object leaked) and frees the paged cache. */
    @Override
    public void close() {
        try {
            engine.close();
        } finally {
            pagedMemory.close();
        }
    }
}
