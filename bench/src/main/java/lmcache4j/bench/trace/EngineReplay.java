package lmcache4j.bench.trace;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

import lmcache4j.allocator.DType;
import lmcache4j.allocator.MemoryFormat;
import lmcache4j.allocator.MemoryObj;
import lmcache4j.allocator.TensorShape;
import lmcache4j.allocator.host.HostArena;
import lmcache4j.allocator.HostArenaOptions;
import lmcache4j.allocator.paged.PagedTensorMemoryAllocator;
import lmcache4j.engine.key.CacheEngineKey;
import lmcache4j.engine.key.CacheKey;
import lmcache4j.engine.storage.StorageBackend;
import lmcache4j.engine.storage.StorageManager;
import lmcache4j.engine.storage.TieredPrefix;
import lmcache4j.engine.storage.cpu.LocalCpuBackend;
import lmcache4j.engine.storage.disk.ChunkFiles;
import lmcache4j.engine.storage.disk.LocalDiskBackend;

/**
 * Replays a trace through the engine's own tiers: a {@link StorageManager} over a
 * {@link LocalCpuBackend} with the chosen {@code cache_policy} and, when asked, a
 * {@link LocalDiskBackend} below it. Each request does what a serving engine does with
 * lmcache4j: a lookup of its full chunks that pins the cached prefix (the policy is told of the
 * lookup), the recency update of the hits, a read of every hit the CPU tier lacks (the disk tier's
 * hits come back into the CPU tier), the unpin, then a store of every chunk after the prefix that no
 * local tier holds (allocation evicts through the policy). A prompt's last, partial block is never
 * stored or looked up.
 *
 * <p>The CPU tier's memory is a {@link PagedTensorMemoryAllocator} with one page per chunk, so its
 * capacity is exact in chunks. {@link Mode#METADATA}: pages of 4 KiB that are never written (no
 * payload bytes move; the whole trace in seconds). {@link Mode#BYTES}: pages of a small KV shape
 * (2 layers, 8 values per token, bf16), every stored chunk filled with its own number and every hit
 * read back and checked. Both modes make the same calls, so they give the same hits.
 */
public final class EngineReplay implements AutoCloseable {
    /** What the chunks hold. */
    public enum Mode {
        /** 4 KiB pages never written: the tiers' bookkeeping alone. */
        METADATA,
        /** A small KV shape, filled on store and checked on every hit. */
        BYTES
    }

    /**
     * @param policy      {@code cache_policy} of the tiers
     * @param cpuChunks   the CPU tier's capacity in chunks
     * @param chunkTokens tokens per chunk: the trace's block size or a divisor of it
     * @param mode        metadata only or real bytes
     * @param diskChunks  the disk tier's capacity in chunks; 0 for no disk tier
     * @param diskDir     where the disk tier's files go (required with a disk tier)
     */
    public record Settings(String policy, int cpuChunks, int chunkTokens, Mode mode, int diskChunks, Path diskDir) {
        public Settings {
            Objects.requireNonNull(policy, "policy");
            Objects.requireNonNull(mode, "mode");
            if (cpuChunks < 1) {
                throw new IllegalArgumentException("the CPU tier needs at least 1 chunk, was " + cpuChunks);
            }
            if (chunkTokens < 1) {
                throw new IllegalArgumentException("chunk tokens must be positive, was " + chunkTokens);
            }
            if (diskChunks < 0 || (diskChunks > 0 && diskDir == null)) {
                throw new IllegalArgumentException("a disk tier needs a positive capacity and a directory");
            }
        }

        /** A CPU tier alone. */
        public static Settings cpu(String policy, int cpuChunks, int chunkTokens, Mode mode) {
            return new Settings(policy, cpuChunks, chunkTokens, mode, 0, null);
        }
    }

    /** Hits of one request: chunks from the CPU tier and from the disk tier (a prefix: CPU ones first). */
    public record Hits(int cpuChunks, int diskChunks) {
        public int chunks() {
            return cpuChunks + diskChunks;
        }
    }

    /** Page of a metadata-only chunk: [2, 1, 1, 1024] bf16, 4 KiB, never touched. */
    static final TensorShape METADATA_PAGE = TensorShape.of(2, 1, 1, 1024);
    /** KV layers of the bytes mode's chunks. */
    static final int BYTES_LAYERS = 2;
    /** Values per token and layer of the bytes mode's chunks. */
    static final int BYTES_HIDDEN = 8;
    static final DType DTYPE = DType.BFLOAT16;
    static final MemoryFormat FORMAT = MemoryFormat.KV_2LTD;
    /** How many puts may wait for the disk: the replay waits for each request's writes anyway. */
    private static final int DISK_QUEUE = 1 << 16;

    private final Trace trace;
    private final Settings settings;
    private final int chunksPerBlock;
    private final TensorShape chunkShape;
    private final ChunkKeys keys;
    private final LocalCpuBackend cpu;
    private final LocalDiskBackend disk;
    private final StorageManager storage;
    private long checkedChunks;
    private long chunkOps;

    public EngineReplay(Trace trace, Settings settings) {
        this.trace = Objects.requireNonNull(trace, "trace");
        this.settings = Objects.requireNonNull(settings, "settings");
        if (trace.blockTokens() % settings.chunkTokens() != 0) {
            throw new IllegalArgumentException("chunk tokens " + settings.chunkTokens() + " must divide the trace's block of "
                    + trace.blockTokens() + " tokens (a chunk key must stand for a known prefix)");
        }
        this.chunksPerBlock = trace.blockTokens() / settings.chunkTokens();
        this.chunkShape = settings.mode() == Mode.METADATA ? METADATA_PAGE
                : TensorShape.of(2, BYTES_LAYERS, settings.chunkTokens(), BYTES_HIDDEN);
        this.keys = new ChunkKeys(trace.blocks(), chunksPerBlock);
        long pageBytes = chunkShape.byteSize(DTYPE);
        HostArena arena = HostArena.allocate(pageBytes * settings.cpuChunks(),
                HostArenaOptions.DEFAULT.withCudaPinned(false).withHugePages(false));
        this.cpu = new LocalCpuBackend(PagedTensorMemoryAllocator.create("trace-replay/cpu", arena, chunkShape, DTYPE),
                settings.policy(), true, 1.0);
        List<StorageBackend> lower = new ArrayList<>();
        if (settings.diskChunks() > 0) {
            try {
                // Each chunk file is a 4 KiB header and the payload in whole 4 KiB blocks.
                long fileBytes = 4096 + (pageBytes + 4095) / 4096 * 4096;
                disk = new LocalDiskBackend(new ChunkFiles(settings.diskDir(), false, false), cpu,
                        fileBytes * settings.diskChunks(), settings.policy(), 2, DISK_QUEUE);
            } catch (IOException e) {
                cpu.close();
                throw new UncheckedIOException("cannot open the disk tier in " + settings.diskDir() + ": " + e.getMessage(), e);
            }
            lower.add(disk);
        } else {
            disk = null;
        }
        this.storage = new StorageManager(cpu, lower);
    }

    public Settings settings() {
        return settings;
    }

    /** Chunks of the trace's block size: 1 for 512-token chunks of Mooncake's 512-token blocks, 2 for 256. */
    public int chunksPerBlock() {
        return chunksPerBlock;
    }

    /** Replays every request; returns each one's hits, in order. */
    public List<Hits> replayAll() {
        List<Hits> hits = new ArrayList<>(trace.requests().size());
        for (Trace.Request r : trace.requests()) {
            hits.add(replay(r));
        }
        return hits;
    }

    /** Replays one request: lookup, hits read, store of the rest. */
    public Hits replay(Trace.Request request) {
        int full = request.fullBlocks(trace.blockTokens());
        List<CacheKey> chunkKeys = new ArrayList<>(full * chunksPerBlock);
        for (int b = 0; b < full; b++) {
            for (int c = 0; c < chunksPerBlock; c++) {
                chunkKeys.add(keys.key(request.blockIds()[b], c));
            }
        }
        TieredPrefix prefix = storage.batchedContains(chunkKeys, true);
        storage.touchCache();
        int fromCpu = prefix.blockMapping().getOrDefault(LocalCpuBackend.NAME, List.of()).size();
        try {
            readHits(chunkKeys.subList(0, prefix.hits()), fromCpu);
        } finally {
            storage.unpin(prefix);
        }
        store(chunkKeys.subList(prefix.hits(), chunkKeys.size()));
        chunkOps += chunkKeys.size();
        return new Hits(fromCpu, prefix.hits() - fromCpu);
    }

    /** A retrieve's reads: what the CPU tier lacks comes back into it; with bytes, every chunk is checked. */
    private void readHits(List<CacheKey> hits, int fromCpu) {
        for (int i = 0; i < hits.size(); i++) {
            if (i < fromCpu && settings.mode() == Mode.METADATA) {
                continue; // held in memory: a retrieve would copy it out; nothing to check without bytes
            }
            Optional<MemoryObj> obj = storage.get(hits.get(i));
            if (obj.isEmpty()) {
                throw new IllegalStateException("chunk " + hits.get(i) + " was a pinned hit but could not be read");
            }
            try {
                if (settings.mode() == Mode.BYTES) {
                    check(obj.get(), (CacheEngineKey) hits.get(i));
                }
            } finally {
                obj.get().release();
            }
        }
    }

    private void store(List<CacheKey> rest) {
        if (rest.isEmpty()) {
            return;
        }
        boolean[] local = storage.containedLocally(rest);
        List<CacheKey> stored = new ArrayList<>(rest.size());
        List<MemoryObj> objs = new ArrayList<>(rest.size());
        for (int i = 0; i < rest.size(); i++) {
            if (local[i]) {
                continue;
            }
            Optional<MemoryObj> obj = storage.allocateForStore(chunkShape, DTYPE, FORMAT);
            if (obj.isEmpty()) {
                break; // as the engine's store: no memory for more, keep those before
            }
            if (settings.mode() == Mode.BYTES) {
                fill(obj.get(), (CacheEngineKey) rest.get(i));
            }
            stored.add(rest.get(i));
            objs.add(obj.get());
        }
        storage.batchedPut(stored, objs, Optional.empty()); // drops our references
        if (disk != null) {
            try {
                disk.awaitPuts(); // a deterministic replay: the writes land before the next lookup
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while the disk tier wrote", e);
            }
        }
    }

    private static void fill(MemoryObj obj, CacheEngineKey key) {
        long pattern = pattern(key);
        MemorySegment s = obj.segment();
        for (long off = 0; off + Long.BYTES <= s.byteSize(); off += Long.BYTES) {
            s.set(ValueLayout.JAVA_LONG_UNALIGNED, off, pattern ^ off);
        }
    }

    private void check(MemoryObj obj, CacheEngineKey key) {
        long pattern = pattern(key);
        MemorySegment s = obj.segment();
        for (long off = 0; off + Long.BYTES <= s.byteSize(); off += Long.BYTES) {
            if (s.get(ValueLayout.JAVA_LONG_UNALIGNED, off) != (pattern ^ off)) {
                throw new IllegalStateException("chunk " + key + " read back other bytes at offset " + off
                        + ": the tiers returned another chunk's data");
            }
        }
        checkedChunks++;
    }

    private static long pattern(CacheEngineKey key) {
        long p = 0;
        for (int i = 0; i < Long.BYTES; i++) {
            p = p << 8 | (key.chunkHash().byteAt(i) & 0xFF);
        }
        return p;
    }

    /** Hit chunks whose bytes were read back and matched (bytes mode). */
    public long checkedChunks() {
        return checkedChunks;
    }

    /** Chunk operations so far: one per full chunk a request looked up (a hit read or a miss stored). */
    public long chunkOps() {
        return chunkOps;
    }

    /** Chunks the CPU tier holds now. */
    public int cpuChunksHeld() {
        return cpu.size();
    }

    /** The CPU tier's allocator stats (live objects, used bytes) and policy invariants, checked. */
    public void memcheck() {
        storage.memcheck();
        if (cpu.size() > settings.cpuChunks()) {
            throw new IllegalStateException("the CPU tier holds " + cpu.size() + " chunks, more than its " + settings.cpuChunks());
        }
    }

    /** The CPU tier (for tests). */
    LocalCpuBackend cpu() {
        return cpu;
    }

    @Override
    public void close() {
        storage.close(); // closes the disk tier, then the CPU tier and its allocator (which fails on a leak)
    }
}
