package lmcache4j.engine.storage.policy;

import java.util.List;
import java.util.function.Predicate;

/**
 * Which cached key to give up when memory runs out (LMCache spec §3.6). A policy only keeps
 * order; the backend owns the entries and tells the policy what happened to them. Not
 * thread-safe: the backend calls it under its own lock.
 *
 * @param <K> the key type
 */
public interface CachePolicy<K> {
    /** A new key entered the cache. */
    void onPut(K key);

    /** A cached key was used (applied by {@code touchCache}, not by plain gets, as in LMCache). */
    void onHit(K key);

    /**
     * A lookup asked for a request's chunks: {@code keys} in prefix order, of which the first
     * {@code held} are held (so {@code keys[held]}, if any, is the first miss). It tells the policy
     * what a request needs, missing chunks included, before they are stored. Called before the
     * recency updates of the hits; by default ignored.
     */
    default void onLookup(List<? extends K> keys, int held) {
    }

    /** A key left the cache (removed or evicted). Unknown keys are ignored. */
    void onRemove(K key);

    /**
     * Up to {@code n} keys to evict, best first, skipping every key {@code evictable} refuses
     * (pinned or shared objects). May return fewer; never a key it was not told about.
     */
    List<K> evictionCandidates(int n, Predicate<? super K> evictable);

    /** Keys tracked, for checks. */
    int size();

    /** The policy's {@code cache_policy} name (one of {@link CachePolicies#NAMES}). */
    String name();
}
