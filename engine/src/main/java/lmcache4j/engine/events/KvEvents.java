package lmcache4j.engine.events;

import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;

import lmcache4j.engine.controller.ControllerKeys;
import lmcache4j.engine.key.CacheKey;
import lmcache4j.engine.key.ChunkHash;
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
 * a chunk admitted later than that (a slow write-back) is published with no tokens and no parent.
 */
public final class KvEvents implements ResidencyListener, AutoCloseable {
    static final int REMEMBERED_CHUNKS = 4096;

    private final KvEventPublisher publisher;
    private final int chunkSize;
    private final Map<ChunkHash, Remembered> remembered = new LinkedHashMap<>(256, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<ChunkHash, Remembered> eldest) {
            return size() > REMEMBERED_CHUNKS;
        }
    };

    private record Remembered(OptionalLong parent, int[] tokens) {
    }

    private KvEvents(KvEventPublisher publisher, int chunkSize) {
        this.publisher = publisher;
        this.chunkSize = chunkSize;
    }

    /** Opens the sockets of {@code settings} (an error names them when they cannot be opened) and starts publishing. */
    public static KvEvents start(KvEventsSettings settings, int chunkSize) {
        return new KvEvents(new KvEventPublisher(settings), chunkSize);
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
        synchronized (remembered) {
            OptionalLong parent = OptionalLong.empty();
            for (ChunkRange c : chunks) {
                ChunkHash hash = c.key().chunkHash();
                if (c.end() <= tokens.length) {
                    remembered.put(hash, new Remembered(parent, Arrays.copyOfRange(tokens, c.start(), c.end())));
                }
                parent = OptionalLong.of(blockHash(hash));
            }
        }
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
        publisher.offer(new KvEvent.BlockStored(new long[] {blockHash(hash)},
                r == null ? OptionalLong.empty() : r.parent(), r == null ? new int[0] : r.tokens(), chunkSize, medium(tier)));
    }

    @Override
    public void evicted(String tier, CacheKey key) {
        if (!(key instanceof LayerCacheEngineKey layer) || layer.layerId() == 0) {
            publisher.offer(new KvEvent.BlockRemoved(new long[] {blockHash(key.chunkKey().chunkHash())}, medium(tier)));
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
