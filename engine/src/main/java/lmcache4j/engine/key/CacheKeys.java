package lmcache4j.engine.key;

import java.util.LinkedHashMap;
import java.util.Map;

import lmcache4j.allocator.DType;

/** Parsing of key strings of either kind, the exact inverse of {@link CacheKey#toKeyString()}. */
public final class CacheKeys {
    private CacheKeys() {
    }

    /**
     * Parses {@code model@world_size@worker_id@<hex>@<dtype>[@<layer>][@tag%value]*}; a purely
     * numeric sixth field is a layer id (LMCache's generic parser does the same).
     *
     * @throws IllegalArgumentException naming the string and the field that is wrong
     */
    public static CacheKey parse(String keyString) {
        String[] f = keyString.split("@", -1);
        if (f.length < 5) {
            throw malformed(keyString, "it has " + f.length + " '@'-separated fields, at least 5 are needed "
                    + "(model@world_size@worker_id@hash@dtype)");
        }
        int worldSize = parseInt(keyString, "world_size", f[1]);
        int workerId = parseInt(keyString, "worker_id", f[2]);
        ChunkHash hash;
        DType dtype;
        try {
            hash = ChunkHash.parseKeyHex(f[3]);
            dtype = DType.fromKeyName(f[4]);
        } catch (IllegalArgumentException e) {
            throw malformed(keyString, e.getMessage());
        }
        int next = 5;
        int layer = -1;
        if (f.length > 5 && !f[5].isEmpty() && f[5].chars().allMatch(Character::isDigit)) {
            layer = parseInt(keyString, "layer_id", f[5]);
            next = 6;
        }
        Map<String, String> tags = new LinkedHashMap<>();
        for (int i = next; i < f.length; i++) {
            int pct = f[i].indexOf('%');
            if (pct <= 0) {
                throw malformed(keyString, "field '" + f[i] + "' is not a tag of the form name%value");
            }
            tags.put(f[i].substring(0, pct), f[i].substring(pct + 1));
        }
        CacheEngineKey chunk;
        try {
            chunk = new CacheEngineKey(f[0], worldSize, workerId, hash, dtype, tags);
        } catch (IllegalArgumentException e) {
            throw malformed(keyString, e.getMessage());
        }
        return layer >= 0 ? chunk.layer(layer) : chunk;
    }

    private static int parseInt(String keyString, String field, String value) {
        try {
            int v = Integer.parseInt(value);
            if (v < 0) {
                throw malformed(keyString, field + " '" + value + "' is negative");
            }
            return v;
        } catch (NumberFormatException e) {
            throw malformed(keyString, field + " '" + value + "' is not a number");
        }
    }

    private static IllegalArgumentException malformed(String keyString, String why) {
        return new IllegalArgumentException("malformed cache key '" + keyString + "': " + why);
    }
}
