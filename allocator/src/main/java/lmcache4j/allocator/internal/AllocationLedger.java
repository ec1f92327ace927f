package lmcache4j.allocator.internal;

import java.io.PrintWriter;
import java.io.StringWriter;

import lmcache4j.allocator.MemoryObj;
import lmcache4j.allocator.MemoryObjMisuseException;
import org.agrona.collections.Long2LongHashMap;
import org.agrona.collections.Long2ObjectHashMap;

/**
 * The live objects of one allocator, keyed by slot (an address, a page index or an id): which
 * allocation owns each slot now. Lets an allocator refuse a free that does not match a live
 * allocation (double free, stale object, wrong allocator), reclaim a leaked slot only if it still
 * belongs to the leaked allocation, and list what is live when it closes. Primitive storage, no
 * garbage per entry: a dense {@code long[]} for a fixed number of slots (pages), else an Agrona
 * map. Not thread-safe: the allocator's lock guards it.
 */
public final class AllocationLedger {
    private static final long NONE = 0; // ids start at 1

    private final long[] dense;
    private final Long2LongHashMap sparse;
    /** Descriptions and allocation sites by id, kept only when sites are recorded. */
    private final Long2ObjectHashMap<String> debugById = new Long2ObjectHashMap<>();
    private int live;
    private long usedBytes;

    private AllocationLedger(long[] dense) {
        this.dense = dense;
        this.sparse = dense == null ? new Long2LongHashMap(NONE) : null;
    }

    /** A ledger for slots that are arbitrary longs (addresses, ids). */
    public static AllocationLedger sparse() {
        return new AllocationLedger(null);
    }

    /** A ledger for slots {@code 0..slots-1} (page indices). */
    public static AllocationLedger dense(int slots) {
        return new AllocationLedger(new long[slots]);
    }

    private long owner(long slot) {
        return dense != null ? dense[(int) slot] : sparse.get(slot);
    }

    private void setOwner(long slot, long id) {
        if (dense != null) {
            dense[(int) slot] = id;
        } else if (id == NONE) {
            sparse.remove(slot);
        } else {
            sparse.put(slot, id);
        }
    }

    /** Records {@code obj} as the owner of {@code slot}. */
    public void add(long slot, MemoryObj obj) {
        long previous = owner(slot);
        if (previous != NONE) {
            throw new IllegalStateException("allocator bug: slot " + slot + " handed to " + obj
                    + " while MemoryObj#" + previous + " still owns it");
        }
        setOwner(slot, obj.id());
        live++;
        usedBytes += obj.physicalSize();
        if (obj.allocationSite() != null) {
            debugById.put(obj.id(), obj + "\n" + stackTrace(obj.allocationSite()));
        }
    }

    /**
     * Removes {@code obj}'s entry; the caller then frees the slot.
     *
     * @throws MemoryObjMisuseException when the slot is not {@code obj}'s
     */
    public void remove(long slot, MemoryObj obj) {
        if (!removeIfOwned(slot, obj.id(), obj.physicalSize())) {
            long owner = owner(slot);
            throw new MemoryObjMisuseException("free of " + obj + " refused: slot " + slot + " is "
                    + (owner == NONE ? "not allocated (double free?)" : "owned by MemoryObj#" + owner) + " in this allocator");
        }
    }

    /** Removes the entry if {@code slot} is still owned by allocation {@code id} of {@code bytes}; used to reclaim leaks. */
    public boolean removeIfOwned(long slot, long id, long bytes) {
        if (owner(slot) != id) {
            return false;
        }
        setOwner(slot, NONE);
        live--;
        usedBytes -= bytes;
        if (!debugById.isEmpty()) {
            debugById.remove(id);
        }
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
        int[] shown = {0};
        forEachLive((slot, id) -> {
            if (shown[0]++ < max) {
                String debug = debugById.get(id);
                sb.append("  ").append(debug != null ? debug : "MemoryObj#" + id + " at slot " + slot
                        + " (run with -Dlmcache4j.leakDetection=paranoid for its allocation site)").append('\n');
            }
        });
        if (shown[0] > max) {
            sb.append("  … and ").append(shown[0] - max).append(" more\n");
        }
        return sb.toString();
    }

    private interface SlotVisitor {
        void visit(long slot, long id);
    }

    private void forEachLive(SlotVisitor visitor) {
        if (dense != null) {
            for (int i = 0; i < dense.length; i++) {
                if (dense[i] != NONE) {
                    visitor.visit(i, dense[i]);
                }
            }
        } else {
            sparse.forEach(visitor::visit);
        }
    }

    private static String stackTrace(Throwable t) {
        StringWriter w = new StringWriter();
        t.printStackTrace(new PrintWriter(w));
        return w.toString().indent(4).stripTrailing();
    }
}
