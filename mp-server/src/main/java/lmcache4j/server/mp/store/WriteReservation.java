package lmcache4j.server.mp.store;

import java.util.List;

/**
 * The objects one {@link MpObjectStore#reserveWrite} call set aside for one owner to fill. The
 * owner copies into {@link #slots()} and then either {@linkplain MpObjectStore#finishWrite
 * publishes} or {@linkplain MpObjectStore#abortWrite aborts}; a reservation left alone past the
 * write TTL, or whose owner is {@linkplain MpObjectStore#abortAll dropped}, is aborted by the store.
 * An empty reservation (everything present, or no memory) is never pending.
 */
public final class WriteReservation {
    private final long id;
    private final String owner;
    private final List<Slot> slots;
    final List<MpObjectStore.Entry> entries;
    final long deadlineNanos;

    WriteReservation(long id, String owner, List<Slot> slots, List<MpObjectStore.Entry> entries, long deadlineNanos) {
        this.id = id;
        this.owner = owner;
        this.slots = List.copyOf(slots);
        this.entries = List.copyOf(entries);
        this.deadlineNanos = deadlineNanos;
    }

    /** Unique within its store; lets the wire layer log and match it. */
    public long id() {
        return id;
    }

    /** The owner (instance id) that reserved it. */
    public String owner() {
        return owner;
    }

    /** The reserved slots, in key order; empty when nothing needed writing or nothing fitted. */
    public List<Slot> slots() {
        return slots;
    }

    /** Whether nothing was reserved. */
    public boolean isEmpty() {
        return slots.isEmpty();
    }

    @Override
    public String toString() {
        return "WriteReservation[" + id + ", owner '" + owner + "', " + slots.size() + " slot(s)]";
    }
}
