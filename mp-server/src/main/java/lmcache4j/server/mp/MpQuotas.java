package lmcache4j.server.mp;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

import lmcache4j.server.mp.store.MpObjectStore;
import lmcache4j.server.mp.wire.IpcCacheServerKey;

/**
 * Per-{@code cache_salt} quotas ({@code /api/quota}): soft limits in GiB. About once a second
 * the least recently used chunks of a salt over its limit are evicted; writes are never
 * refused. Touched by HTTP handlers through the loop thread only.
 */
final class MpQuotas {
    /** Salts with a quota at once: the HTTP port cannot make the server hold more. */
    static final int MAX_QUOTAS = 10_000;
    private final Map<String, Double> limits = new LinkedHashMap<>();
    private final MpObjectStore store;

    MpQuotas(MpObjectStore store) {
        this.store = store;
    }

    Map<String, Double> limits() {
        return limits;
    }

    /** Why LMCache refuses this salt, or empty. */
    static Optional<String> checkSalt(String salt) {
        try {
            IpcCacheServerKey.checkSalt(salt);
            return Optional.empty();
        } catch (IllegalArgumentException e) {
            return Optional.of(e.getMessage());
        }
    }

    /** Sets the salt's limit; false (nothing set) when {@value #MAX_QUOTAS} other salts have one. */
    boolean set(String salt, double gb) {
        if (!limits.containsKey(salt) && limits.size() >= MAX_QUOTAS) {
            return false;
        }
        limits.put(salt, gb);
        return true;
    }

    boolean remove(String salt) {
        return limits.remove(salt) != null;
    }

    Map<String, Object> describe(String salt) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("cache_salt", salt.isEmpty() ? "_default" : salt);
        out.put("limit_gb", limits.get(salt));
        out.put("current_usage_gb", store.saltUsage(salt) / (double) (1L << 30));
        out.put("exists", limits.containsKey(salt));
        return out;
    }

    Map<String, Object> all() {
        Map<String, Object> out = new LinkedHashMap<>();
        limits.forEach((salt, gb) -> {
            Map<String, Object> u = new LinkedHashMap<>();
            u.put("limit_gb", gb);
            u.put("current_usage_gb", store.saltUsage(salt) / (double) (1L << 30));
            out.put(salt.isEmpty() ? "_default" : salt, u);
        });
        return out;
    }
}
