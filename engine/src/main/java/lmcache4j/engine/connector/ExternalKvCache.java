package lmcache4j.engine.connector;

import java.lang.foreign.MemorySegment;

import lmcache4j.allocator.DType;

/**
 * A serving engine's KV cache in a layout of its own, one the engine has no copy planner for
 * (Jlama's pages, for one): its owner copies each chunk in and out of the engine's chunk objects.
 * The objects are LMCache's whole-chunk format, {@code KV_2LTD}
 * {@code [2, layers, tokens, numKvHeads × headSize]} of {@link #dtype()} (plane 0 the keys, plane 1
 * the values), so what one engine stores another reads, whatever its own cache looks like.
 *
 * <p>Token {@code t} of a request is position {@code t} of this cache: a prefix is reused at the
 * positions it was computed at (its keys carry those positions' rotary embedding).
 */
public interface ExternalKvCache {
    /** The element type of the keys and values. */
    DType dtype();

    /** Attention layers. */
    int layerCount();

    /** KV heads per layer. */
    int numKvHeads();

    /** Elements per head. */
    int headSize();

    /** Positions the cache holds: a request may have at most this many tokens. */
    int capacity();

    /**
     * Copies positions {@code [start, end)} of every layer into {@code chunk}, laid out
     * {@code [2, layers, end - start, numKvHeads × headSize]}. {@code chunk} is exactly that size.
     */
    void gather(int start, int end, MemorySegment chunk);

    /** Copies {@code chunk}, laid out as {@link #gather} writes it, into positions {@code [start, end)} of every layer. */
    void scatter(MemorySegment chunk, int start, int end);

    /** Elements of one position's keys (or values) in one layer. */
    default int hidden() {
        return numKvHeads() * headSize();
    }
}
