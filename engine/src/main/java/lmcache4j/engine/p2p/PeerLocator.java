package lmcache4j.engine.p2p;

import java.util.List;
import java.util.concurrent.CompletableFuture;

import lmcache4j.engine.key.CacheKey;

/**
 * Finds the peers that hold chunks: over the cache controller ({@code BatchedP2PLookupMsg}), or
 * by asking a fixed list of peers ({@link ProbingPeerLocator}).
 */
@FunctionalInterface
public interface PeerLocator {

    /**
     * The peers holding a leading run of {@code keys} (in prefix order), any order; the asking
     * instance itself may be among them (the P2P tier skips it). Completes exceptionally when the
     * lookup fails; an empty list means no peer holds the first key.
     */
    CompletableFuture<List<PeerHolding>> locate(List<? extends CacheKey> keys);
}
