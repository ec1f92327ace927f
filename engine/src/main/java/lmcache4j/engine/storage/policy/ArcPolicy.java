package lmcache4j.engine.storage.policy;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;
import java.util.function.Predicate;
import java.util.function.ToLongFunction;

/**
 * ARC (Megiddo and Modha, FAST '03), as vLLM's CPU offloading offers it ({@code arc} in
 * vllm/v1/kv_offload/cpu/policies): T1 holds keys seen once, T2 keys seen again, each in recency
 * order; the ghost lists B1 and B2 remember (by fingerprint) what each evicted. A put of a key B1
 * remembers grows T1's target, one B2 remembers shrinks it, and either goes to T2. Candidates come
 * from T1 while it is above its target, else from T2 (the other list when the first has nothing
 * evictable). The capacity {@code c} bounding the target and the ghosts is the most keys held at
 * once (the tier's capacity once it is full). Not thread-safe.
 */
final class ArcPolicy<K> implements CachePolicy<K> {
    static final String NAME = "ARC";

    private final ToLongFunction<? super K> fingerprint;
    private final LinkedHashSet<K> t1 = new LinkedHashSet<>();
    private final LinkedHashSet<K> t2 = new LinkedHashSet<>();
    private final FingerprintLru b1 = new FingerprintLru(1);
    private final FingerprintLru b2 = new FingerprintLru(1);
    private double target;
    private int capacity = 1;
    private boolean lastPutFromB2;

    ArcPolicy(ToLongFunction<? super K> fingerprint) {
        this.fingerprint = Objects.requireNonNull(fingerprint, "fingerprint");
    }

    @Override
    public void onPut(K key) {
        if (t1.contains(key) || t2.contains(key)) {
            return;
        }
        long fp = fingerprint.applyAsLong(key);
        int s1 = b1.size();
        int s2 = b2.size();
        lastPutFromB2 = false;
        if (b1.remove(fp)) {
            target = Math.min(capacity, target + (s1 >= s2 ? 1.0 : (double) s2 / s1));
            t2.add(key);
        } else if (b2.remove(fp)) {
            target = Math.max(0, target - (s2 >= s1 ? 1.0 : (double) s1 / s2));
            t2.add(key);
            lastPutFromB2 = true;
        } else {
            t1.add(key);
        }
        int held = t1.size() + t2.size();
        if (held > capacity) {
            capacity = held;
            b1.growTo(capacity);
            b2.growTo(capacity);
        }
    }

    @Override
    public void onHit(K key) {
        if (t1.remove(key) || t2.remove(key)) {
            t2.add(key); // seen again, or again: most recent in T2
        }
    }

    @Override
    public void onRemove(K key) {
        if (t1.remove(key)) {
            b1.add(fingerprint.applyAsLong(key));
        } else if (t2.remove(key)) {
            b2.add(fingerprint.applyAsLong(key));
        }
    }

    @Override
    public List<K> evictionCandidates(int n, Predicate<? super K> evictable) {
        boolean t1First = !t1.isEmpty() && (t1.size() > target || (lastPutFromB2 && t1.size() == (int) target));
        List<K> chosen = new ArrayList<>(Math.min(n, 16));
        take(t1First ? t1 : t2, n, evictable, chosen);
        take(t1First ? t2 : t1, n, evictable, chosen);
        return chosen;
    }

    private static <K> void take(LinkedHashSet<K> list, int n, Predicate<? super K> evictable, List<K> chosen) {
        for (K key : list) {
            if (chosen.size() >= n) {
                return;
            }
            if (evictable.test(key)) {
                chosen.add(key);
            }
        }
    }

    @Override
    public int size() {
        return t1.size() + t2.size();
    }

    /** T1's target size p, for checks. */
    double target() {
        return target;
    }

    @Override
    public String name() {
        return NAME;
    }
}
