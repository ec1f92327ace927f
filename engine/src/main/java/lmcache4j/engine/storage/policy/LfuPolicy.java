package lmcache4j.engine.storage.policy;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Predicate;

/**
 * Least frequently used (LMCache's LFU): a put starts a key at frequency 1, each hit adds one;
 * candidates come from the lowest frequency up, first-in-first-out within a frequency, and a
 * selected key leaves the bookkeeping at selection time (as in LMCache).
 */
final class LfuPolicy<K> implements CachePolicy<K> {
    private final Map<K, Integer> frequency = new HashMap<>();
    private final TreeMap<Integer, LinkedHashSet<K>> buckets = new TreeMap<>();

    @Override
    public void onPut(K key) {
        if (frequency.putIfAbsent(key, 1) == null) {
            buckets.computeIfAbsent(1, f -> new LinkedHashSet<>()).add(key);
        }
    }

    @Override
    public void onHit(K key) {
        Integer f = frequency.get(key);
        if (f == null) {
            return;
        }
        leaveBucket(key, f);
        frequency.put(key, f + 1);
        buckets.computeIfAbsent(f + 1, x -> new LinkedHashSet<>()).add(key);
    }

    @Override
    public void onRemove(K key) {
        Integer f = frequency.remove(key);
        if (f != null) {
            leaveBucket(key, f);
        }
    }

    @Override
    public List<K> evictionCandidates(int n, Predicate<? super K> evictable) {
        List<K> chosen = new ArrayList<>(Math.min(n, 16));
        for (Iterator<Map.Entry<Integer, LinkedHashSet<K>>> buckets = this.buckets.entrySet().iterator();
             buckets.hasNext() && chosen.size() < n; ) {
            LinkedHashSet<K> bucket = buckets.next().getValue();
            for (Iterator<K> keys = bucket.iterator(); keys.hasNext() && chosen.size() < n; ) {
                K key = keys.next();
                if (evictable.test(key)) {
                    chosen.add(key);
                    keys.remove();
                    frequency.remove(key);
                }
            }
            if (bucket.isEmpty()) {
                buckets.remove();
            }
        }
        return chosen;
    }

    private void leaveBucket(K key, int f) {
        LinkedHashSet<K> bucket = buckets.get(f);
        bucket.remove(key);
        if (bucket.isEmpty()) {
            buckets.remove(f);
        }
    }

    @Override
    public int size() {
        return frequency.size();
    }

    @Override
    public String name() {
        return "LFU";
    }
}
