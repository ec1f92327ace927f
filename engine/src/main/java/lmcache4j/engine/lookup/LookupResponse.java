package lmcache4j.engine.lookup;

import java.util.Objects;

/**
 * A worker's answer to one asynchronous lookup: how many leading tokens of the request it has
 * ready (prefetched into its CPU tier).
 *
 * @param lookupId  the request's id
 * @param hitTokens tokens ready, in [0, 2^31) (LMCache's wire allows 4 unsigned bytes)
 */
public record LookupResponse(String lookupId, int hitTokens) {
    public LookupResponse {
        Objects.requireNonNull(lookupId, "lookupId");
        if (hitTokens < 0) {
            throw new IllegalArgumentException("hit tokens must be >= 0, was " + hitTokens);
        }
    }
}
