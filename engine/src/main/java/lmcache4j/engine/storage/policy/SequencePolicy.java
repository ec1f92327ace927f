package lmcache4j.engine.storage.policy;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.function.Predicate;

/**
 * The policies that keep keys in one sequence: FIFO (insertion order, hits do nothing), LRU (a
 * hit moves the key to the end, evict from the front) and MRU (same order, evict from the end).
 */
final class SequencePolicy<K> implements CachePolicy<K> {
    private final String name;
    private final boolean hitsReorder;
    private final boolean evictNewestFirst;
    private final LinkedHashSet<K> order = new LinkedHashSet<>();

    SequencePolicy(String name, boolean hitsReorder, boolean evictNewestFirst) {
        this.name = name;
        this.hitsReorder = hitsReorder;
        this.evictNewestFirst = evictNewestFirst;
    }

    @Override
    public void onPut(K key) {
        order.add(key);
    }

    @Override
    public void onHit(K key) {
        if (hitsReorder && order.remove(key)) {
            order.add(key);
        }
    }

    @Override
    public void onRemove(K key) {
        order.remove(key);
    }

    @Override
    public List<K> evictionCandidates(int n, Predicate<? super K> evictable) {
        List<K> chosen = new ArrayList<>(Math.min(n, 16));
        Iterator<K> it = evictNewestFirst ? order.reversed().iterator() : order.iterator();
        while (chosen.size() < n && it.hasNext()) {
            K key = it.next();
            if (evictable.test(key)) {
                chosen.add(key);
            }
        }
        return chosen;
    }

    @Override
    public int size() {
        return order.size();
    }

    @Override
    public String name() {
        return name;
    }
}
