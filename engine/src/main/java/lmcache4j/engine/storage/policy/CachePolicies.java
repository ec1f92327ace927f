package lmcache4j.engine.storage.policy;

import java.util.Locale;

/** Makes policies by their LMCache names ({@code cache_policy}): LRU (default), LFU, FIFO, MRU. */
public final class CachePolicies {
    private CachePolicies() {
    }

    /**
     * The policy named {@code name}, case-insensitively.
     *
     * @throws IllegalArgumentException for another name, listing the valid ones
     */
    public static <K> CachePolicy<K> create(String name) {
        return switch (name.strip().toUpperCase(Locale.ROOT)) {
            case "LRU" -> new SequencePolicy<>("LRU", true, false);
            case "MRU" -> new SequencePolicy<>("MRU", true, true);
            case "FIFO" -> new SequencePolicy<>("FIFO", false, false);
            case "LFU" -> new LfuPolicy<>();
            default -> throw new IllegalArgumentException("unknown cache_policy '" + name + "'; valid: LRU, LFU, FIFO, MRU");
        };
    }
}
