package lmcache4j.allocator.internal;

import java.io.PrintWriter;
import java.io.StringWriter;

import lmcache4j.allocator.MemoryObj;
import lmcache4j.allocator.MemoryObjMisuseException;

/**
 * The live allocations of one allocator: which allocation owns each slot now. Lets an allocator
 * refuse a free that does not match a live allocation (double free, stale object, wrong
 * allocator), reclaim a leaked slot only if it still belongs to the leaked allocation, and list
 * what is live when it closes.
 *
 * <p>Two forms, neither hashing on the hot path:
 * <ul>
 *   <li>{@link #dense(int)}: for a fixed number of slots (pages), the owning id per slot in a
 *       {@code long[]};</li>
 *   <li>{@link #linked()}: for arbitrary slots (addresses, ids), one {@link Entry} per allocation,
 *       made by {@link #newEntry(long)} before the object and kept in it,
 *       linked into a list of the live ones: O(1) to add and remove.</li>
 * </ul>
 * Not thread-safe: the allocator's lock guards it.
 */
public final class AllocationLedger {
    private static final long NONE = 0; // ids start at 1

    /** One allocation of a linked ledger. */
    public static final class Entry {
        private final AllocationLedger ledger;
        private final long slot;
        private long id = NONE;
        private long bytes;
        private String debug;
        private Entry prev;
        private Entry next;

        private Entry(AllocationLedger ledger, long slot) {
            this.ledger = ledger;
            this.slot = slot;
        }

        /** Whether the allocation is still live in its ledger. */
        public boolean isLive() {
            return id != NONE;
        }
    }

    private final long[] dense;
    private Entry head;
    private int live;
    private long usedBytes;

    private AllocationLedger(long[] dense) {
        this.dense = dense;
    }

    /** A ledger for arbitrary slots, one linked entry per allocation. */
    public static AllocationLedger linked() {
        return new AllocationLedger(null);
    }

    /** A ledger for slots {@code 0..slots-1} (page indices). */
    public static AllocationLedger dense(int slots) {
        return new AllocationLedger(new long[slots]);
    }

    /** The entry to give the object about to be made for {@code slot} (null for a dense ledger). */
    public Entry newEntry(long slot) {
        return dense == null ? new Entry(this, slot) : null;
    }

    /** Records {@code obj}, which carries {@code entry} (from {@link #newEntry}), as the owner of {@code slot}. */
    public void add(long slot, MemoryObj obj, Entry entry) {
        if (dense != null) {
            if (dense[(int) slot] != NONE) {
                throw new IllegalStateException("allocator bug: slot " + slot + " handed to " + obj
                        + " while MemoryObj#" + dense[(int) slot] + " still owns it");
            }
            dense[(int) slot] = obj.id();
        } else {
            Entry e = entry;
            if (e == null || e.ledger != this || e.slot != slot || e.isLive()) {
                throw new IllegalStateException("allocator bug: " + obj + " carries no fresh ledger entry for slot " + slot);
            }
            e.id = obj.id();
            e.bytes = obj.physicalSize();
            e.next = head;
            if (head != null) {
                head.prev = e;
            }
            head = e;
            if (obj.allocationSite() != null) {
                e.debug = obj + "\n" + stackTrace(obj.allocationSite());
            }
        }
        live++;
        usedBytes += obj.physicalSize();
    }

    /**
     * Removes the record of {@code obj}, which carries {@code entry}; the caller then frees the slot.
     *
     * @throws MemoryObjMisuseException when the slot is not {@code obj}'s
     */
    public void remove(long slot, MemoryObj obj, Entry entry) {
        boolean removed = dense != null ? removeDense(slot, obj.id(), obj.physicalSize())
                : entry != null && entry.ledger == this && unlink(entry);
        if (!removed) {
            throw new MemoryObjMisuseException("free of " + obj + " refused: slot " + slot
                    + " is not this allocation's in this allocator (double free?)");
        }
    }

    /**
     * For a leak: removes the record of allocation {@code id} of {@code bytes} at {@code slot}
     * (which carried {@code entry}) if it is still live, and says whether it was.
     */
    public boolean removeLeaked(long slot, long id, long bytes, Entry entry) {
        return dense != null ? removeDense(slot, id, bytes) : entry != null && entry.ledger == this && unlink(entry);
    }

    private boolean removeDense(long slot, long id, long bytes) {
        if (dense[(int) slot] != id) {
            return false;
        }
        dense[(int) slot] = NONE;
        live--;
        usedBytes -= bytes;
        return true;
    }

    private boolean unlink(Entry e) {
        if (!e.isLive()) {
            return false;
        }
        if (e.prev != null) {
            e.prev.next = e.next;
        } else {
            head = e.next;
        }
        if (e.next != null) {
            e.next.prev = e.prev;
        }
        e.prev = null;
        e.next = null;
        e.id = NONE;
        e.debug = null;
        live--;
        usedBytes -= e.bytes;
        return true;
    }

    /** Live objects. */
    public int size() {
        return live;
    }

    /** Bytes held by live objects. */
    public long usedBytes() {
        return usedBytes;
    }

    /** A listing of the live objects, at most {@code max} of them, with sites when recorded. */
    public String describeLive(int max) {
        StringBuilder sb = new StringBuilder();
        int shown = 0;
        if (dense != null) {
            for (int i = 0; i < dense.length; i++) {
                if (dense[i] != NONE && shown++ < max) {
                    sb.append("  MemoryObj#").append(dense[i]).append(" in page ").append(i).append(HINT).append('\n');
                }
            }
        } else {
            for (Entry e = head; e != null; e = e.next) {
                if (shown++ < max) {
                    sb.append("  ").append(e.debug != null ? e.debug
                            : "MemoryObj#" + e.id + " at offset " + e.slot + ", " + e.bytes + " bytes" + HINT).append('\n');
                }
            }
        }
        if (shown > max) {
            sb.append("  … and ").append(shown - max).append(" more\n");
        }
        return sb.toString();
    }

    private static final String HINT = " (run with -Dlmcache4j.leakDetection=paranoid for its allocation site)";

    private static String stackTrace(Throwable t) {
        StringWriter w = new StringWriter();
        t.printStackTrace(new PrintWriter(w));
        return w.toString().indent(4).stripTrailing();
    }
}
