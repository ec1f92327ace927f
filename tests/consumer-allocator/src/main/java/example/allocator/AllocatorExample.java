package example.allocator;

import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;

import lmcache4j.allocator.DType;
import lmcache4j.allocator.HostArenaOptions;
import lmcache4j.allocator.HostMemoryAllocator;
import lmcache4j.allocator.MemoryFormat;
import lmcache4j.allocator.MemoryObj;
import lmcache4j.allocator.TensorShape;

/** Fills 64 MiB of host memory with KV chunks, frees every other one, fills the holes again, checks every byte. */
public final class AllocatorExample {
    /** Chunks that fit, chunks that refilled the holes, free fragments after the frees and at the end, bytes found changed. */
    public record Result(int chunks, int refilled, long fragmentsAfterFree, long fragmentsAtEnd, long wrongBytes) {
    }

    // One 256-token chunk of a small model's KV: K and V, 4 layers, 256 tokens, 8 heads × 128, bf16 = 4 MiB.
    static final TensorShape CHUNK = TensorShape.of(2, 4, 256, 8 * 128);

    public static void main(String[] args) {
        // CUDA-pinned where a GPU and its driver exist, else anonymous mmap memory; 2 MiB pages advised.
        try (HostMemoryAllocator kv = HostMemoryAllocator.tensor("kv", 64L << 20, HostArenaOptions.DEFAULT)) {
            System.out.println(run(kv));
            System.out.println("memory: " + kv.memoryDescription() + (kv.cudaPinned() ? " (CUDA-pinned)" : ""));
        } // closing fails, naming them, if an object were still live
    }

    static Result run(HostMemoryAllocator kv) {
        List<MemoryObj> chunks = new ArrayList<>();
        for (var next = allocate(kv); next != null; next = allocate(kv)) { // empty: the memory is full
            fill(next, chunks.size());
            chunks.add(next);
        }
        int count = chunks.size();
        for (int i = 0; i < count; i += 2) {
            chunks.get(i).release(); // the last reference: the memory goes back
        }
        long fragmentsAfterFree = kv.stats().fragmentCount();
        int refilled = 0;
        for (int i = 0; i < count; i += 2) {
            MemoryObj again = allocate(kv); // first fit: the lowest hole
            fill(again, i);
            chunks.set(i, again);
            refilled++;
        }
        long wrong = 0;
        for (int i = 0; i < count; i++) {
            wrong += check(chunks.get(i), i);
            chunks.get(i).release();
        }
        return new Result(count, refilled, fragmentsAfterFree, kv.stats().fragmentCount(), wrong);
    }

    private static MemoryObj allocate(HostMemoryAllocator kv) {
        return kv.allocate(CHUNK, DType.BFLOAT16, MemoryFormat.KV_2LTD).orElse(null);
    }

    private static void fill(MemoryObj chunk, int seed) {
        for (long o = 0; o < chunk.byteSize(); o += 8) {
            chunk.segment().set(ValueLayout.JAVA_LONG, o, seed * 31L + o);
        }
    }

    private static long check(MemoryObj chunk, int seed) {
        long wrong = 0;
        for (long o = 0; o < chunk.byteSize(); o += 8) {
            wrong += chunk.segment().get(ValueLayout.JAVA_LONG, o) == seed * 31L + o ? 0 : 8;
        }
        return wrong;
    }

    private AllocatorExample() {
    }
}
