package lmcache4j.engine.storage.policy;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.Predicate;
import java.util.function.ToLongFunction;

/**
 * S3-FIFO (Yang et al., SOSP '23), LMCache's {@code S3FIFO}: new keys enter a small FIFO S of a
 * tenth of the capacity, keys its ghost G remembers (by fingerprint) enter the main FIFO M; a hit
 * raises a key's frequency (at most 3). Eviction takes from S while S holds its tenth: a key hit
 * while in S moves to M, an unhit one is the victim and G remembers it; from M, a key with a
 * frequency goes back to M's tail one lower, one without is the victim. As LMCache's, a chosen
 * candidate leaves the bookkeeping when chosen. A key that cannot be evicted now (pinned) is passed
 * over for the pass and goes to its queue's tail, so a pass offers every evictable key it reaches.
 * The capacity is the most keys held at once; G holds as many as M. Not thread-safe.
 */
final class S3FifoPolicy<K> implements CachePolicy<K> {
    static final String NAME = "S3FIFO";
    /** Hits counted at most. */
    static final int MAX_FREQUENCY = 3;

    private final ToLongFunction<? super K> fingerprint;
    private final Map<K, int[]> frequency = new HashMap<>();
    private final LinkedHashSet<K> small = new LinkedHashSet<>();
    private final LinkedHashSet<K> main = new LinkedHashSet<>();
    private final FingerprintLru ghost = new FingerprintLru(1);
    private int capacity = 1;

    S3FifoPolicy(ToLongFunction<? super K> fingerprint) {
        this.fingerprint = Objects.requireNonNull(fingerprint, "fingerprint");
    }

    @Override
    public void onPut(K key) {
        if (frequency.containsKey(key)) {
            return;
        }
        frequency.put(key, new int[1]);
        if (ghost.remove(fingerprint.applyAsLong(key))) {
            main.add(key);
        } else {
            small.add(key);
        }
        if (frequency.size() > capacity) {
            capacity = frequency.size();
            ghost.growTo(Math.max(1, capacity - smallTarget()));
        }
    }

    @Override
    public void onHit(K key) {
        int[] f = frequency.get(key);
        if (f != null && f[0] < MAX_FREQUENCY) {
            f[0]++;
        }
    }

    @Override
    public void onRemove(K key) {
        if (frequency.remove(key) != null) {
            small.remove(key);
            main.remove(key);
        }
    }

    @Override
    public List<K> evictionCandidates(int n, Predicate<? super K> evictable) {
        List<K> chosen = new ArrayList<>(Math.min(n, 16));
        // Pinned keys are set aside for the pass and go back to their queue's tail at its end, so
        // a pinned head of S never hides M's evictable keys. Every step promotes a key, lowers a
        // frequency, sets a key aside or chooses it, so the pass ends without a step bound.
        List<K> pinnedSmall = new ArrayList<>();
        List<K> pinnedMain = new ArrayList<>();
        while (chosen.size() < n && !(small.isEmpty() && main.isEmpty())) {
            // S's share counts its pinned keys: they hold their place in S.
            boolean fromSmall = !small.isEmpty()
                    && (small.size() + pinnedSmall.size() >= smallTarget() || main.isEmpty());
            LinkedHashSet<K> queue = fromSmall ? small : main;
            Iterator<K> head = queue.iterator();
            K key = head.next();
            head.remove();
            int[] f = frequency.get(key);
            if (fromSmall && f[0] > 0) {
                f[0] = 0;
                main.add(key); // hit while new: promoted
            } else if (!fromSmall && f[0] > 0) {
                f[0]--;
                main.add(key); // another round in M
            } else if (!evictable.test(key)) {
                (fromSmall ? pinnedSmall : pinnedMain).add(key);
            } else {
                frequency.remove(key);
                if (fromSmall) {
                    ghost.add(fingerprint.applyAsLong(key));
                }
                chosen.add(key);
            }
        }
        small.addAll(pinnedSmall);
        main.addAll(pinnedMain);
        return chosen;
    }

    private int smallTarget() {
        return Math.max(1, capacity / 10);
    }

    @Override
    public int size() {
        return frequency.size();
    }

    @Override
    public String name() {
        return NAME;
    }
}
