package lmcache4j.server.controller.index;

import java.util.Arrays;
import java.util.function.LongPredicate;

import org.agrona.collections.LongHashSet;

/**
 * One holder's reverse index: the keys it was admitted, in order, on one primitive array. An admit
 * appends (a sequential write: no hashing and no cache miss, where a hash set took one of each per
 * admit, about half of the index's cost). An evict only counts: the key stays in the log, stale,
 * until stale entries outnumber live ones ({@link #needsCompaction}), when {@link #compact} keeps
 * the keys the forward table still pairs with this holder, each once. So the log holds at most
 * about twice the live keys plus the doubling slack, and compaction costs one forward probe per
 * entry, paid once per at least as many evicts.
 *
 * <p>Readers walk {@link #at} up to {@link #length}, which may give a stale key or a key twice:
 * callers check the forward table (removal does, as {@code remove(key, holder)} answers false for
 * those).
 *
 * <p>Not thread-safe: {@link ChunkIndex}'s write lock guards it.
 */
final class KeyLog {
    /** Stale entries tolerated before compaction, however few are live: small logs never churn. */
    static final int MIN_STALE = 1024;

    private long[] keys;
    private int length;
    private int live;

    KeyLog() {
        keys = new long[16];
    }

    /** Records an admitted key (the caller knows the holder did not hold it). */
    void append(long key) {
        if (length == keys.length) {
            keys = Arrays.copyOf(keys, Math.max(16, (int) Math.min(Integer.MAX_VALUE - 8, keys.length * 2L)));
        }
        keys[length++] = key;
        live++;
    }

    /** Records that one of the keys was evicted (it stays in the log until compaction). */
    void evicted() {
        live--;
    }

    /** Keys the holder holds. */
    int live() {
        return live;
    }

    /** Entries in the log, stale ones and repeats included. */
    int length() {
        return length;
    }

    boolean needsCompaction() {
        int stale = length - live;
        return stale > MIN_STALE && stale > live;
    }

    /**
     * Keeps the entries {@code held} still holds, each once, in their order, and shrinks the array
     * to fit them with room to grow.
     */
    void compact(LongPredicate held) {
        LongHashSet kept = new LongHashSet(Math.max(8, live * 2)); // repeats: admitted, evicted, admitted again
        int out = 0;
        for (int i = 0; i < length; i++) {
            long key = keys[i];
            if (held.test(key) && kept.add(key)) {
                keys[out++] = key;
            }
        }
        length = out;
        live = out;
        keys = Arrays.copyOf(keys, Math.max(16, out + out / 2));
    }

    /** The entry at {@code i} (below {@link #length}), stale or a repeat perhaps, oldest first. */
    long at(int i) {
        return keys[i];
    }

    /** Bytes of the log's array. */
    long memoryBytes() {
        return (long) keys.length * Long.BYTES;
    }
}
