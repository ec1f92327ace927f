package lmcache4j.engine.lookup;

import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * One asynchronous lookup as it travels from the scheduler to a worker: the request's id, each
 * chunk's hash (lmcache4j: the digest folded to 64 bits) and token count, and the request's configs.
 *
 * @param lookupId       the request's id (vLLM's request id)
 * @param chunkHashes    each chunk's hash, as the 64 bits of an unsigned (or, from Python, signed) integer
 * @param chunkTokens    each chunk's token count, at least 1 (LMCache's offsets: end − start)
 * @param requestConfigs the request's configs, in order
 */
public record LookupRequest(String lookupId, long[] chunkHashes, int[] chunkTokens, Map<String, String> requestConfigs) {
    public LookupRequest {
        Objects.requireNonNull(lookupId, "lookupId");
        chunkHashes = chunkHashes.clone();
        chunkTokens = chunkTokens.clone();
        if (chunkHashes.length != chunkTokens.length) {
            throw new IllegalArgumentException(chunkHashes.length + " chunk hashes but " + chunkTokens.length
                    + " token counts");
        }
        for (int n : chunkTokens) {
            if (n < 1) {
                throw new IllegalArgumentException("a chunk's token count must be >= 1, was " + n);
            }
        }
        requestConfigs = Collections.unmodifiableMap(new LinkedHashMap<>(requestConfigs));
    }

    @Override
    public long[] chunkHashes() {
        return chunkHashes.clone();
    }

    @Override
    public int[] chunkTokens() {
        return chunkTokens.clone();
    }

    /** Tokens the request's chunks cover. */
    public long tokenCount() {
        long n = 0;
        for (int t : chunkTokens) {
            n += t;
        }
        return n;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof LookupRequest r && lookupId.equals(r.lookupId) && Arrays.equals(chunkHashes, r.chunkHashes)
                && Arrays.equals(chunkTokens, r.chunkTokens) && requestConfigs.equals(r.requestConfigs);
    }

    @Override
    public int hashCode() {
        return Objects.hash(lookupId, Arrays.hashCode(chunkHashes), Arrays.hashCode(chunkTokens), requestConfigs);
    }

    @Override
    public String toString() {
        return "LookupRequest[" + lookupId + ", " + chunkHashes.length + " chunks, " + tokenCount() + " tokens, configs "
                + requestConfigs + "]";
    }
}
