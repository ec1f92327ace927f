package lmcache4j.engine.storage.policy;

import java.util.List;
import java.util.Locale;
import java.util.function.ToLongFunction;

import lmcache4j.engine.key.CacheEngineKey;
import lmcache4j.engine.key.CacheKey;
import lmcache4j.engine.key.ChunkHash;
import lmcache4j.engine.key.LayerCacheEngineKey;

/**
 * Makes policies by their {@code cache_policy} names: LMCache's LRU (default), LFU, FIFO, MRU and
 * S3FIFO; ARC (vLLM's CPU offloading policy); and lmcache4j's KV_ADAPTIVE ({@link KvAdaptivePolicy}).
 */
public final class CachePolicies {
    /** Every name {@code cache_policy} accepts, case-insensitively. */
    public static final List<String> NAMES = List.of("LRU", "LFU", "FIFO", "MRU", "S3FIFO", "ARC", KvAdaptivePolicy.NAME);

    private CachePolicies() {
    }

    /**
     * The policy named {@code name}, case-insensitively, for keys whose {@code hashCode} is stable
     * (the policies that remember evicted keys keep a fingerprint made from it).
     *
     * @throws IllegalArgumentException for another name, listing the valid ones
     */
    public static <K> CachePolicy<K> create(String name) {
        return create(name, key -> key.hashCode());
    }

    /** The policy for a tier's chunk keys: fingerprints come from the chunk hash, worker and layer. */
    public static CachePolicy<CacheKey> forChunks(String name) {
        return create(name, CachePolicies::fingerprint);
    }

    /**
     * The policy named {@code name}, remembering evicted keys by {@code fingerprint} (equal keys must
     * give equal fingerprints; distinct keys should rarely collide).
     */
    public static <K> CachePolicy<K> create(String name, ToLongFunction<? super K> fingerprint) {
        return switch (name.strip().toUpperCase(Locale.ROOT)) {
            case "LRU" -> new SequencePolicy<>("LRU", true, false);
            case "MRU" -> new SequencePolicy<>("MRU", true, true);
            case "FIFO" -> new SequencePolicy<>("FIFO", false, false);
            case "LFU" -> new LfuPolicy<>();
            case S3FifoPolicy.NAME -> new S3FifoPolicy<>(fingerprint);
            case ArcPolicy.NAME -> new ArcPolicy<>(fingerprint);
            case KvAdaptivePolicy.NAME -> new KvAdaptivePolicy<>(fingerprint);
            default -> throw new IllegalArgumentException("unknown cache_policy '" + name + "'; valid: "
                    + String.join(", ", NAMES));
        };
    }

    /** A chunk key's 64-bit fingerprint: the first 8 bytes of its chunk hash, mixed with its worker and layer. */
    static long fingerprint(CacheKey key) {
        CacheEngineKey chunk = key.chunkKey();
        ChunkHash hash = chunk.chunkHash();
        long fp = 0;
        if (hash.length() >= Long.BYTES) {
            for (int i = 0; i < Long.BYTES; i++) {
                fp = fp << 8 | (hash.byteAt(i) & 0xFF);
            }
        } else {
            fp = hash.hashCode();
        }
        int layer = key instanceof LayerCacheEngineKey layered ? layered.layerId() + 1 : 0;
        return fp ^ (chunk.workerId() * 0x9E3779B97F4A7C15L) ^ (layer * 0xC2B2AE3D27D4EB4FL)
                ^ ((long) chunk.modelName().hashCode() << 32);
    }
}
