package example.allocator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import lmcache4j.allocator.AllocatorStats;
import lmcache4j.allocator.DType;
import lmcache4j.allocator.HostArenaOptions;
import lmcache4j.allocator.HostMemoryAllocator;
import lmcache4j.allocator.MemoryFormat;
import lmcache4j.allocator.MemoryObj;
import lmcache4j.allocator.TensorShape;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.Tuple;

/**
 * Random allocate/free sequences through the public API, each step checked against a model of
 * the allocator's documented placement: sizes rounded up to 4 KiB, first fit by lowest address,
 * freed blocks merged with both neighbours. Every live object keeps its own bytes (no overlap).
 */
class AllocatorModelProperties {
    static final long CAPACITY = 1 << 20;
    static final long ALIGNMENT = 4096;

    /** Allocate {@code tokens} tokens of a [2, 1, tokens, 64] bf16 chunk (256 bytes per token), or free live object {@code index % live}. */
    record Step(boolean allocate, int tokens, int index) {
    }

    @Provide
    Arbitrary<List<Step>> steps() {
        Arbitrary<Step> allocate = Arbitraries.integers().between(1, 640).map(t -> new Step(true, t, 0));
        Arbitrary<Step> free = Arbitraries.integers().between(0, 1_000).map(i -> new Step(false, 0, i));
        return Arbitraries.frequencyOf(Tuple.of(3, allocate), Tuple.of(2, free)).list().ofMaxSize(300);
    }

    @Property(tries = 200)
    void placementAndAccountingFollowTheModel(@ForAll("steps") List<Step> steps) {
        HostArenaOptions plain = HostArenaOptions.DEFAULT.withHugePages(false).withCudaPinned(false);
        try (HostMemoryAllocator allocator = HostMemoryAllocator.tensor("fuzz", CAPACITY, plain)) {
            FirstFitModel model = new FirstFitModel(CAPACITY);
            List<MemoryObj> live = new ArrayList<>();
            for (Step step : steps) {
                if (step.allocate()) {
                    long size = step.tokens() * 256L;
                    long expected = model.allocate((size + ALIGNMENT - 1) / ALIGNMENT * ALIGNMENT);
                    var got = allocator.allocate(TensorShape.of(2, 1, step.tokens(), 64), DType.BFLOAT16, MemoryFormat.KV_2LTD);
                    assertEquals(expected >= 0, got.isPresent(), "room for " + size + " bytes: " + model);
                    if (got.isPresent()) {
                        assertEquals(expected, got.get().address(), "first fit by lowest address: " + model);
                        fill(got.get());
                        live.add(got.get());
                    }
                } else if (!live.isEmpty()) {
                    MemoryObj gone = live.remove(step.index() % live.size());
                    model.free(gone.address(), gone.physicalSize());
                    gone.release();
                }
                AllocatorStats stats = allocator.stats();
                assertEquals(model.used(), stats.usedBytes());
                assertEquals(model.blocks(), stats.fragmentCount(), "free blocks, every neighbour merged: " + model);
                assertEquals(model.largest(), stats.largestFreeBlock());
                assertEquals(live.size(), stats.liveObjects());
            }
            for (MemoryObj obj : live) {
                assertTrue(holdsItsOwnBytes(obj), obj + " was overwritten by another object");
                obj.release();
            }
            allocator.memcheck();
            assertEquals(1, allocator.stats().fragmentCount());
        }
    }

    /** Each object's bytes are its id, so an overlap with another live object shows. */
    private static void fill(MemoryObj obj) {
        for (long o = 0; o < obj.byteSize(); o += 8) {
            obj.segment().set(ValueLayout.JAVA_LONG, o, obj.id());
        }
    }

    private static boolean holdsItsOwnBytes(MemoryObj obj) {
        for (long o = 0; o < obj.byteSize(); o += 8) {
            if (obj.segment().get(ValueLayout.JAVA_LONG, o) != obj.id()) {
                return false;
            }
        }
        return true;
    }

    /** The placement the allocator documents, as a plain sorted map of free blocks: start → size. */
    static final class FirstFitModel {
        private final TreeMap<Long, Long> free = new TreeMap<>();
        private final long capacity;

        FirstFitModel(long capacity) {
            this.capacity = capacity;
            free.put(0L, capacity);
        }

        /** The start of the lowest free block of at least {@code size} bytes, now taken; -1 when none. */
        long allocate(long size) {
            for (Map.Entry<Long, Long> block : free.entrySet()) {
                long start = block.getKey();
                long length = block.getValue(); // read before the map changes: TreeMap reuses removed entries
                if (length >= size) {
                    free.remove(start);
                    if (length > size) {
                        free.put(start + size, length - size);
                    }
                    return start;
                }
            }
            return -1;
        }

        void free(long start, long size) {
            long end = start + size;
            Map.Entry<Long, Long> after = free.ceilingEntry(end);
            if (after != null && after.getKey() == end) {
                free.remove(end);
                size += after.getValue();
            }
            Map.Entry<Long, Long> before = free.lowerEntry(start);
            if (before != null && before.getKey() + before.getValue() == start) {
                start = before.getKey();
                size += before.getValue();
            }
            free.put(start, size);
        }

        long used() {
            return capacity - free.values().stream().mapToLong(Long::longValue).sum();
        }

        long blocks() {
            return free.size();
        }

        long largest() {
            return free.values().stream().mapToLong(Long::longValue).max().orElse(0);
        }

        @Override
        public String toString() {
            return "free blocks " + free;
        }
    }
}
