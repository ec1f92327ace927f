package lmcache4j.engine.storage.policy;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.Predicate;
import java.util.function.ToLongFunction;

/**
 * lmcache4j's eviction policy for KV chunks ({@code cache_policy: KV_ADAPTIVE}), built on what a
 * KV cache knows and a generic cache does not:
 *
 * <ul>
 *   <li><b>Lookups announce requests.</b> Every lookup hands the policy the request's chunk keys in
 *       prefix order, held or not ({@link #onLookup}): the policy learns each missing chunk's
 *       predecessor before the chunk is stored, and sees every chunk a request asks for, which
 *       feeds its reuse memory and its tuning below.</li>
 *   <li><b>A chunk is worth nothing without its predecessors.</b> A chunk whose predecessor left the
 *       cache is an orphan no lookup can reach: orphans go first. Within one request's stored
 *       chunks the last goes first (tails before heads), so what stays is still a usable prefix.</li>
 *   <li><b>Conversations come back.</b> Most chunks a prompt adds are never asked for again; a chunk
 *       asked for a second time (a conversation's next turn, a shared document) is likely asked
 *       again. The policy keeps two recency lanes, fresh chunks and reused ones (remembered across
 *       eviction by fingerprint, for {@value #HISTORY_FACTOR} capacities of chunks), and a reused
 *       chunk outlives a fresh one of the same age by a <i>bonus</i> of accesses.</li>
 *   <li><b>How long to keep them depends on the cache.</b> The bonus that serves most hits shrinks
 *       as the cache grows (a small cache must keep only what comes back; a large one can wait for
 *       everything). {@link BonusTuner} measures it on miniature replicas of the lookup stream and
 *       hands the cache the best; until the cache first evicts the bonus is 0 (plain recency).</li>
 * </ul>
 *
 * <p>Memory: one node per held chunk, and a set entry per held orphan; fingerprints of at most
 * {@value #HISTORY_FACTOR} × the largest number of chunks held (at most {@value #MAX_HISTORY}); predecessors of at most
 * {@value #MAX_ANNOUNCED} announced chunks not yet stored; the tuner's replicas (a bounded sample).
 * Not thread-safe: the tier calls it under its lock.
 */
final class KvAdaptivePolicy<K> implements CachePolicy<K> {
    /** The policy's {@code cache_policy} name. */
    static final String NAME = "KV_ADAPTIVE";
    /** Fingerprints of chunks remembered, in capacities of the cache (held ones included). */
    static final int HISTORY_FACTOR = 4;
    /** At most this many fingerprints are remembered (about 40 bytes each). */
    static final int MAX_HISTORY = 1 << 22;
    /** At most this many announced chunks wait for their store (the oldest are forgotten). */
    static final int MAX_ANNOUNCED = 1 << 16;

    private static final class Node<K> {
        final K key;
        final long fingerprint;
        Lane<K> lane;
        Node<K> prev;
        Node<K> next;
        long stamp;
        Node<K> parent;
        Node<K> firstChild;
        Node<K> prevSibling;
        Node<K> nextSibling;

        Node(K key, long fingerprint) {
            this.key = key;
            this.fingerprint = fingerprint;
        }
    }

    /** A recency list, eldest first. */
    private static final class Lane<K> {
        Node<K> eldest;
        Node<K> youngest;

        void append(Node<K> n) {
            n.lane = this;
            n.prev = youngest;
            n.next = null;
            if (youngest != null) {
                youngest.next = n;
            } else {
                eldest = n;
            }
            youngest = n;
        }

        /** Puts {@code n} just before {@code at} (so it goes first). */
        void insertBefore(Node<K> n, Node<K> at) {
            n.lane = this;
            n.next = at;
            n.prev = at.prev;
            if (at.prev != null) {
                at.prev.next = n;
            } else {
                eldest = n;
            }
            at.prev = n;
        }

        void unlink(Node<K> n) {
            if (n.prev != null) {
                n.prev.next = n.next;
            } else {
                eldest = n.next;
            }
            if (n.next != null) {
                n.next.prev = n.prev;
            } else {
                youngest = n.prev;
            }
            n.prev = null;
            n.next = null;
            n.lane = null;
        }
    }

    private final ToLongFunction<? super K> fingerprint;
    private final Map<K, Node<K>> nodes = new HashMap<>();
    private final Lane<K> fresh = new Lane<>();
    private final Lane<K> reused = new Lane<>();
    /**
     * Held chunks whose predecessor left, in the order they became orphans. A set (identity: nodes
     * keep Object's equality) so that a removed orphan leaves it at once: removals that never meet
     * an eviction pass cannot make it outgrow the chunks held.
     */
    private final LinkedHashSet<Node<K>> orphans = new LinkedHashSet<>();
    private final FingerprintLru history = new FingerprintLru(HISTORY_FACTOR);
    /** Announced, not yet stored chunk → the chunk before it in its request. */
    private final LinkedHashMap<K, K> announcedParents = new LinkedHashMap<>() {
        @Override
        protected boolean removeEldestEntry(Map.Entry<K, K> eldest) {
            return size() > MAX_ANNOUNCED;
        }
    };
    private BonusTuner tuner;
    private long clock;
    private int peak;
    /** The node the latest put stored: its successor in the same request goes before it. */
    private Node<K> lastPut;

    /** @param fingerprint a well-spread 64-bit fingerprint of a key (equal keys, equal fingerprints) */
    KvAdaptivePolicy(ToLongFunction<? super K> fingerprint) {
        this.fingerprint = Objects.requireNonNull(fingerprint, "fingerprint");
    }

    /** Whether a fresh chunk last used at {@code freshStamp} goes before a reused one last used at {@code reusedStamp}. */
    static boolean freshGoesFirst(long freshStamp, long reusedStamp, long bonus) {
        return bonus == Long.MAX_VALUE || freshStamp - reusedStamp <= bonus;
    }

    @Override
    public void onLookup(List<? extends K> keys, int held) {
        for (int i = Math.max(1, held); i < keys.size(); i++) {
            announcedParents.put(keys.get(i), keys.get(i - 1));
        }
        if (tuner != null) {
            for (K key : keys) {
                tuner.access(fingerprint.applyAsLong(key));
            }
        }
    }

    @Override
    public void onPut(K key) {
        if (nodes.containsKey(key)) {
            return;
        }
        clock++;
        Node<K> node = new Node<>(key, fingerprint.applyAsLong(key));
        boolean seenBefore = history.touch(node.fingerprint);
        Lane<K> lane = seenBefore ? reused : fresh;
        K parentKey = announcedParents.remove(key);
        Node<K> parent = parentKey == null ? null : nodes.get(parentKey);
        if (parent != null && parent == lastPut && parent.lane == lane) {
            node.stamp = parent.stamp; // the same request's next chunk: it goes before its predecessor
            lane.insertBefore(node, parent);
        } else {
            node.stamp = clock;
            lane.append(node);
        }
        if (parent != null) {
            adopt(parent, node);
        }
        nodes.put(key, node);
        lastPut = node;
        if (nodes.size() > peak) {
            peak = nodes.size();
            history.growTo((int) Math.min(MAX_HISTORY, (long) HISTORY_FACTOR * peak));
        }
    }

    @Override
    public void onHit(K key) {
        Node<K> node = nodes.get(key);
        if (node == null) {
            return;
        }
        clock++;
        history.touch(node.fingerprint);
        node.lane.unlink(node);
        node.stamp = clock;
        reused.append(node);
        lastPut = null;
    }

    @Override
    public void onRemove(K key) {
        Node<K> node = nodes.remove(key);
        if (node == null) {
            return;
        }
        node.lane.unlink(node);
        orphans.remove(node);
        if (node.parent != null) {
            disown(node.parent, node);
        }
        for (Node<K> child = node.firstChild; child != null; ) {
            Node<K> next = child.nextSibling;
            child.parent = null;
            child.prevSibling = null;
            child.nextSibling = null;
            orphans.add(child); // no lookup can reach it any more
            child = next;
        }
        node.firstChild = null;
        if (lastPut == node) {
            lastPut = null;
        }
    }

    @Override
    public List<K> evictionCandidates(int n, Predicate<? super K> evictable) {
        if (tuner == null && peak > 0) {
            tuner = new BonusTuner(peak); // the first eviction: the cache is full, its capacity known
        }
        long bonus = tuner == null ? 0 : tuner.bonus();
        List<K> chosen = new ArrayList<>(Math.min(n, 16));
        for (Node<K> orphan : orphans) { // held ones only: a node never gets a parent again
            if (chosen.size() >= n) {
                break;
            }
            if (evictable.test(orphan.key)) {
                chosen.add(orphan.key);
            }
        }
        Node<K> f = fresh.eldest;
        Node<K> r = reused.eldest;
        while (chosen.size() < n && (f != null || r != null)) {
            boolean takeFresh = r == null || (f != null && freshGoesFirst(f.stamp, r.stamp, bonus));
            Node<K> c = takeFresh ? f : r;
            if (takeFresh) {
                f = f.next;
            } else {
                r = r.next;
            }
            if (evictable.test(c.key) && !chosen.contains(c.key)) {
                chosen.add(c.key);
            }
        }
        return chosen;
    }

    @Override
    public int size() {
        return nodes.size();
    }

    @Override
    public String name() {
        return NAME;
    }

    /** Orphans tracked: held chunks whose predecessor left, never more than the chunks held (for checks). */
    int orphansTracked() {
        return orphans.size();
    }

    /** The bonus now, in multiples of the capacity (for reports); 0 before the first eviction. */
    double bonusMultiple() {
        return tuner == null ? 0 : tuner.bonusMultiple();
    }

    private static <K> void adopt(Node<K> parent, Node<K> child) {
        child.parent = parent;
        child.nextSibling = parent.firstChild;
        if (parent.firstChild != null) {
            parent.firstChild.prevSibling = child;
        }
        parent.firstChild = child;
    }

    private static <K> void disown(Node<K> parent, Node<K> child) {
        if (child.prevSibling != null) {
            child.prevSibling.nextSibling = child.nextSibling;
        } else {
            parent.firstChild = child.nextSibling;
        }
        if (child.nextSibling != null) {
            child.nextSibling.prevSibling = child.prevSibling;
        }
        child.parent = null;
        child.prevSibling = null;
        child.nextSibling = null;
    }
}
