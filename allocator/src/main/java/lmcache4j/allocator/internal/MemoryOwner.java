package lmcache4j.allocator.internal;

import lmcache4j.allocator.MemoryObj;

/**
 * The allocator side of a {@link MemoryObj}: where its memory goes back when the last reference
 * and the last pin are gone. Implemented by the allocators; not part of the public API.
 */
public interface MemoryOwner {
    /** Takes the object's memory back. Called exactly once per object. */
    void reclaim(MemoryObj obj);

    /** The number of pinned objects changed by {@code delta} (+1 on a first pin, -1 on a last unpin). */
    void pinnedCountChanged(int delta);

    /** The allocator's name, for messages. */
    String name();
}
