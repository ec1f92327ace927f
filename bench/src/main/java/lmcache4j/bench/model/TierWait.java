package lmcache4j.bench.model;

import java.util.Arrays;
import java.util.Map;

import lmcache4j.engine.LMCacheEngine;
import lmcache4j.engine.PreparedRequest;
import lmcache4j.engine.key.ChunkRange;
import lmcache4j.engine.storage.StorageBackend;

/** Waiting for a lower tier to hold what a store sent it: writes below the CPU tier are asynchronous. */
final class TierWait {
    static final long TIMEOUT_NANOS = 60_000_000_000L;

    private TierWait() {
    }

    /** Waits until {@code tier} holds every full chunk of {@code tokens}; throws after {@link #TIMEOUT_NANOS}. */
    static void untilHeld(LMCacheEngine engine, int[] tokens, String tier) {
        StorageBackend backend = engine.storage().tier(tier)
                .orElseThrow(() -> new IllegalStateException("the engine has no " + tier));
        int chunk = engine.config().chunkSize();
        PreparedRequest request = engine.prepare(Arrays.copyOf(tokens, tokens.length / chunk * chunk), Map.of());
        long deadline = System.nanoTime() + TIMEOUT_NANOS;
        for (ChunkRange range : request.chunks()) {
            while (!backend.contains(range.key(), false)) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException(tier + " did not hold a stored chunk (" + range + ") within "
                            + TIMEOUT_NANOS / 1_000_000_000L + " s");
                }
                sleep();
            }
        }
    }

    /**
     * Empties the CPU tier. A chunk whose write to a lower tier is still in flight is not evictable
     * yet, so this clears until nothing is left; throws after {@link #TIMEOUT_NANOS}.
     */
    static void emptyCpuTier(LMCacheEngine engine) {
        long deadline = System.nanoTime() + TIMEOUT_NANOS;
        while (true) {
            engine.storage().cpu().clear();
            if (engine.storage().cpu().size() == 0) {
                return;
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("the CPU tier still holds " + engine.storage().cpu().size()
                        + " chunk(s) in use after " + TIMEOUT_NANOS / 1_000_000_000L + " s");
            }
            sleep();
        }
    }

    private static void sleep() {
        try {
            Thread.sleep(5);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while waiting for the engine's tiers", e);
        }
    }
}
