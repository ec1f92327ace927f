package lmcache4j.engine.events;

import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;

import lmcache4j.engine.controller.ControllerKeys;
import lmcache4j.engine.key.CacheKey;
import lmcache4j.engine.key.ChunkHash;
import lmcache4j.engine.key.ChunkHasher;
import lmcache4j.engine.key.ChunkRange;
import lmcache4j.engine.key.LayerCacheEngineKey;
import lmcache4j.engine.p2p.P2pBackend;
import lmcache4j.engine.remote.RemoteBackend;
import lmcache4j.engine.storage.ResidencyListener;
import lmcache4j.engine.storage.cpu.LocalCpuBackend;
import lmcache4j.engine.storage.disk.LocalDiskBackend;

/**
 * An engine's tiers as vLLM's KV events: a chunk entering a tier is a {@code BlockStored} of one
 * block (block size = the chunk size) in that tier's medium, a chunk leaving it a
 * {@code BlockRemoved}, an engine emptied by {@code clear()} an {@code AllBlocksCleared}. The tokens
 * and the parent of a stored chunk come from the request that hashed it: the last
 * {@value #REMEMBERED_CHUNKS} chunks hashed are remembered for that (about 1 KiB each at 256 tokens);
 * a chunk admitted later than that (a slow write-back) is published with no tokens and no parent,
 * and, when its key carries LMCache's integer, with that integer as its block hash.
 */
public final class KvEvents implements ResidencyListener, AutoCloseable {
    static final int REMEMBERED_CHUNKS = 4096;

    private final KvEventPublisher publisher;
    private final int chunkSize;
    /** For vLLM's block hashes of chunks whose keys carry LMCache's integers ({@code storage_chunk_keys: lmcache}). */
    private final ChunkHasher hasher;
    private final Map<ChunkHash, Remembered> remembered = new LinkedHashMap<>(256, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<ChunkHash, Remembered> eldest) {
            return size() > REMEMBERED_CHUNKS;
        }
    };

    private record Remembered(long blockHash, OptionalLong parent, int[] tokens) {
    }

    private KvEvents(KvEventPublisher publisher, int chunkSize, ChunkHasher hasher) {
        this.publisher = publisher;
        this.chunkSize = chunkSize;
        this.hasher = hasher;
    }

    /**
     * Opens the sockets of {@code settings} (an error names them when they cannot be opened) and starts
     * publishing; {@code hasher} is the engine's, which gives vLLM's block hash of a chunk keyed by
     * LMCache's integer.
     */
    public static KvEvents start(KvEventsSettings settings, int chunkSize, ChunkHasher hasher) {
        return new KvEvents(new KvEventPublisher(settings), chunkSize, hasher);
    }

    /**
     * The 64-bit block hash of a chunk digest, as vLLM folds a block hash for its KV events
     * ({@code maybe_convert_block_hash}: {@code int.from_bytes(h, "big") & ((1 << 64) - 1)}, the
     * digest's last 8 bytes), kept in a long's bits.
     */
    public static long blockHash(ChunkHash hash) {
        return ControllerKeys.vllmFold(hash);
    }

    /** vLLM's {@code medium} for a tier: CPU, DISK, REMOTE, P2P (another tier: its name). */
    static String medium(String tier) {
        return switch (tier) {
            case LocalCpuBackend.NAME -> "CPU";
            case LocalDiskBackend.NAME -> "DISK";
            case RemoteBackend.NAME -> "REMOTE";
            case P2pBackend.NAME -> "P2P";
            default -> tier;
        };
    }

    /** Remembers the tokens and parents of a request's chunks, for the {@code BlockStored} of their admits. */
    public void remember(int[] tokens, List<ChunkRange> chunks) {
        // Keys in LMCache's integer form: the block hashes are vLLM's, from the digest chain over the same chunks.
        ChunkHash digest = hasher.noneHash();
        int hashedTo = 0;
        synchronized (remembered) {
            OptionalLong parent = OptionalLong.empty();
            for (ChunkRange c : chunks) {
                ChunkHash hash = c.key().chunkHash();
                long block;
                if (hash.isInteger() && c.end() <= tokens.length) {
                    for (; hashedTo < c.start(); hashedTo += chunkSize) { // chunks a mask left out still chain
                        digest = hasher.next(digest, tokens, hashedTo, Math.min(hashedTo + chunkSize, c.start()));
                    }
                    digest = hasher.next(digest, tokens, c.start(), c.end());
                    hashedTo = c.end();
                    block = ControllerKeys.vllmFold(digest);
                } else {
                    block = blockHash(hash);
                }
                if (c.end() <= tokens.length) {
                    remembered.put(hash, new Remembered(block, parent, Arrays.copyOfRange(tokens, c.start(), c.end())));
                }
                parent = OptionalLong.of(block);
            }
        }
    }

    /** The block hash of {@code hash}'s chunk: remembered from its request, else the fold of the key's own hash. */
    private long blockOf(ChunkHash hash, Remembered r) {
        return r != null ? r.blockHash() : blockHash(hash);
    }

    @Override
    public void admitted(String tier, CacheKey key) {
        if (key instanceof LayerCacheEngineKey layer && layer.layerId() != 0) {
            return; // layerwise objects: a chunk is published once, with its first layer
        }
        ChunkHash hash = key.chunkKey().chunkHash();
        Remembered r;
        synchronized (remembered) {
            r = remembered.get(hash);
        }
        publisher.offer(new KvEvent.BlockStored(new long[] {blockOf(hash, r)},
                r == null ? OptionalLong.empty() : r.parent(), r == null ? new int[0] : r.tokens(), chunkSize, medium(tier)));
    }

    @Override
    public void evicted(String tier, CacheKey key) {
        if (!(key instanceof LayerCacheEngineKey layer) || layer.layerId() == 0) {
            ChunkHash hash = key.chunkKey().chunkHash();
            Remembered r;
            synchronized (remembered) {
                r = remembered.get(hash);
            }
            publisher.offer(new KvEvent.BlockRemoved(new long[] {blockOf(hash, r)}, medium(tier)));
        }
    }

    /** The engine holds nothing any more. */
    public void allCleared() {
        publisher.offer(new KvEvent.AllBlocksCleared());
    }

    /** Events dropped because the queue was full. */
    public long dropped() {
        return publisher.dropped();
    }

    /** Batches published so far. */
    public long publishedBatches() {
        return publisher.publishedBatches();
    }

    @Override
    public void close() {
        publisher.close();
    }
}
