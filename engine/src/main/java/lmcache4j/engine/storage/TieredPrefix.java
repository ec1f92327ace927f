package lmcache4j.engine.storage;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import lmcache4j.engine.key.CacheKey;

/**
 * The answer of a tiered prefix lookup: how many leading keys are stored somewhere, and which tier
 * holds which consecutive run of them, in search order.
 *
 * @param hits         leading keys found
 * @param blockMapping tier name → the run of keys found there, in order
 */
public record TieredPrefix(int hits, Map<String, List<CacheKey>> blockMapping) {
    public TieredPrefix {
        blockMapping = Collections.unmodifiableMap(new LinkedHashMap<>(blockMapping));
    }
}
