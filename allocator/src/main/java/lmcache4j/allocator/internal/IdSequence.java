package lmcache4j.allocator.internal;

import java.util.concurrent.atomic.AtomicInteger;

/**
 * Allocation ids, unique for the life of the process without a shared atomic counter on the
 * allocation path: each allocator draws a serial number once and numbers its own allocations under
 * its lock; an id is {@code serial << 40 | sequence}. (A process-wide {@code incrementAndGet} per
 * allocation cost several percent of an allocate+free pair.)
 */
public final class IdSequence {
    private static final AtomicInteger SERIALS = new AtomicInteger();
    private static final int SEQUENCE_BITS = 40;

    private final long base;
    private long next;

    public IdSequence() {
        int serial = SERIALS.incrementAndGet();
        if (serial >= 1 << (63 - SEQUENCE_BITS)) {
            throw new IllegalStateException("more than " + (1 << (63 - SEQUENCE_BITS)) + " allocators in one process");
        }
        this.base = (long) serial << SEQUENCE_BITS;
    }

    /** The next id; call under the allocator's lock. Never 0. */
    public long next() {
        if (++next >= 1L << SEQUENCE_BITS) {
            throw new IllegalStateException("allocator ran out of ids after 2^40 allocations");
        }
        return base | next;
    }
}
