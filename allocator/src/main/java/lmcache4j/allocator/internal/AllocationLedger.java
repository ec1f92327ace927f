package lmcache4j.allocator.internal;

import java.io.PrintWriter;
import java.io.StringWriter;

import lmcache4j.allocator.MemoryObj;
import lmcache4j.allocator.MemoryObjMisuseException;
import org.agrona.collections.Long2LongHashMap;
import org.agrona.collections.Long2ObjectHashMap;

/**
 * The live objects of one allocator, keyed by slot (address or id): which allocation owns each
 * slot now and how big it is. Lets an allocator refuse a free that does not match a live
 * allocation (double free, stale object, wrong allocator), reclaim a leaked slot only if it still
 * belongs to the leaked allocation, and list what is live when it closes. Primitive maps: no
 * garbage per entry. Not thread-safe: the allocator's lock guards it.
 */
public final class AllocationLedger {
    private static final long NONE = -1;

    private final Long2LongHashMap idBySlot = new Long2LongHashMap(NONE);
    private final Long2LongHashMap sizeBySlot = new Long2LongHashMap(NONE);
    /** Descriptions and allocation sites by id, kept only when sites are recorded. */
    private final Long2ObjectHashMap<String> debugById = new Long2ObjectHashMap<>();
    private long usedBytes;

    /** Records {@code obj} as the owner of {@code slot}. */
    public void add(long slot, MemoryObj obj) {
        long previous = idBySlot.put(slot, obj.id());
        if (previous != NONE) {
            idBySlot.put(slot, previous);
            throw new IllegalStateException("allocator bug: slot " + slot + " handed to " + obj
                    + " while MemoryObj#" + previous + " still owns it");
        }
        sizeBySlot.put(slot, obj.physicalSize());
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
        if (!removeIfOwned(slot, obj.id())) {
            throw new MemoryObjMisuseException("free of " + obj + " refused: slot " + slot + " is "
                    + (idBySlot.get(slot) == NONE ? "not allocated (double free?)" : "owned by MemoryObj#" + idBySlot.get(slot))
                    + " in this allocator");
        }
    }

    /** Removes the entry if {@code slot} is still owned by allocation {@code id}; used to reclaim leaks. */
    public boolean removeIfOwned(long slot, long id) {
        if (idBySlot.get(slot) != id) {
            return false;
        }
        idBySlot.remove(slot);
        usedBytes -= sizeBySlot.remove(slot);
        debugById.remove(id);
        return true;
    }

    /** Whether allocation {@code id} owns {@code slot}. */
    public boolean owns(long slot, long id) {
        return idBySlot.get(slot) == id;
    }

    /** Live objects. */
    public int size() {
        return idBySlot.size();
    }

    /** Bytes held by live objects. */
    public long usedBytes() {
        return usedBytes;
    }

    /** A listing of the live objects, at most {@code max} of them, with sites when recorded. */
    public String describeLive(int max) {
        StringBuilder sb = new StringBuilder();
        int[] shown = {0};
        idBySlot.forEach((slot, id) -> {
            if (shown[0]++ < max) {
                String debug = debugById.get(id);
                sb.append("  ").append(debug != null ? debug : "MemoryObj#" + id + " at slot " + slot + ", "
                        + sizeBySlot.get(slot) + " bytes (run with -Dlmcache4j.leakDetection=paranoid for its allocation site)")
                        .append('\n');
            }
        });
        if (shown[0] > max) {
            sb.append("  … and ").append(shown[0] - max).append(" more\n");
        }
        return sb.toString();
    }

    private static String stackTrace(Throwable t) {
        StringWriter w = new StringWriter();
        t.printStackTrace(new PrintWriter(w));
        return w.toString().indent(4).stripTrailing();
    }
}
