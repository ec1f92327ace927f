package lmcache4j.tests;

import java.util.Map;

import lmcache4j.engine.LMCacheEngine;
import lmcache4j.engine.connector.PagedKvCache;
import lmcache4j.engine.storage.MemoryWaitTimeoutException;

/**
 * The soak's requests against the engine, each checked as it completes: a retrieve loads a prefix
 * of the prompt with no hole after it, and every byte it loaded is the KV {@link PrefixKv} computes
 * for that prefix (the slots are poisoned first, so stale KV cannot pass). A retrieve may time out
 * waiting for memory only while an allocation burst holds some.
 */
final class SoakRun {
    /** What the run has done so far. */
    static final class Tally {
        long ops;
        long retrieves;
        long retrievedTokens;
        long verifiedBytes;
        long storedTokens;
        long lookups;
        long lookupHitTokens;
        long promptTokens;
        /** Served requests whose retrieve loaded less than their lookup found (a fault in between). */
        long shortRetrieves;
        /** Retrieves that timed out waiting for memory during an allocation burst. */
        long memoryTimeouts;
    }

    private final LMCacheEngine engine;
    private final PagedKvCache kv;
    private final SoakWorkload workload;
    private final SoakFaults faults;
    private final long seed;
    private final long bytesPerToken;
    final Tally tally = new Tally();

    SoakRun(LMCacheEngine engine, PagedKvCache kv, SoakWorkload workload, SoakFaults faults, long seed) {
        this.engine = engine;
        this.kv = kv;
        this.workload = workload;
        this.faults = faults;
        this.seed = seed;
        this.bytesPerToken = (long) kv.layerCount() * kv.layout().kvPlanes() * kv.vectorBytes();
    }

    /** Runs operation {@code op}: the workload's next operation on its next prompt. */
    void runOne(long op) {
        SoakWorkload.Op what = workload.nextOp();
        int[] prompt = workload.nextPrompt();
        long[] slots = workload.slots(prompt.length, kv.numBlocks(), kv.blockSize());
        long[] hashes = PrefixKv.prefixHashes(prompt);
        String id = "op-" + op;
        tally.ops++;
        tally.promptTokens += prompt.length;
        switch (what) {
            case SERVE -> {
                int hit = lookup(prompt, id);
                int retrieved = retrieve(op, prompt, slots, hashes, id);
                if (retrieved < hit) {
                    tally.shortRetrieves++;
                }
                PrefixKv.write(kv, hashes, slots, retrieved, prompt.length);
                store(prompt, slots);
            }
            case STORE_ONLY -> {
                PrefixKv.write(kv, hashes, slots, 0, prompt.length);
                store(prompt, slots);
            }
            case RETRIEVE_WITHOUT_LOOKUP -> retrieve(op, prompt, slots, hashes, null);
            case ABANDONED_LOOKUP -> {
                lookup(prompt, id);
                engine.lookupUnpin(id);
            }
            case LOOKUP_ONLY -> lookup(prompt, null);
        }
    }

    private int lookup(int[] prompt, String id) {
        int hit = engine.lookup(prompt, Map.of(), id);
        tally.lookups++;
        tally.lookupHitTokens += hit;
        return hit;
    }

    private void store(int[] prompt, long[] slots) {
        tally.storedTokens += engine.store(prompt, null, kv, slots, Map.of());
    }

    /** Retrieves the prompt into its slots and checks what came back; returns the tokens loaded (0 after a memory timeout). */
    private int retrieve(long op, int[] prompt, long[] slots, long[] hashes, String lookupId) {
        PrefixKv.poison(kv, slots, 0, prompt.length);
        boolean[] loaded;
        try {
            loaded = engine.retrieve(prompt, null, kv, slots, Map.of(), lookupId);
        } catch (MemoryWaitTimeoutException e) {
            if (!faults.burstActive()) {
                throw failure(op, "a retrieve timed out waiting for memory while no burst held any: " + e.getMessage(), e);
            }
            tally.memoryTimeouts++;
            return 0;
        }
        int retrieved = 0;
        while (retrieved < loaded.length && loaded[retrieved]) {
            retrieved++;
        }
        for (int t = retrieved; t < loaded.length; t++) {
            if (loaded[t]) {
                throw failure(op, "the retrieve of " + prompt.length + " tokens has a hole: token " + t
                        + " loaded after the prefix ended at " + retrieved, null);
            }
        }
        long badWords = PrefixKv.mismatchingWords(kv, hashes, slots, 0, retrieved);
        if (badWords != 0) {
            throw failure(op, badWords + " of the " + retrieved * bytesPerToken / 8 + " retrieved 64-bit words of a "
                    + prompt.length + "-token prompt differ from its KV", null);
        }
        tally.retrieves++;
        tally.retrievedTokens += retrieved;
        tally.verifiedBytes += retrieved * bytesPerToken;
        return retrieved;
    }

    private AssertionError failure(long op, String what, Throwable cause) {
        return new AssertionError("soak op " + op + " (seed " + seed + "): " + what + "; recent faults: " + faults.recent(),
                cause);
    }
}
