package lmcache4j.bench.demo;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;

import lmcache4j.allocator.DType;
import lmcache4j.engine.connector.PagedKvCache;
import lmcache4j.engine.connector.PagedLayout;

/**
 * A paged KV cache of three layers, four 16-token blocks, 2 heads × 8 (bf16), for verifier tests.
 * Its own class, not members of a test class: surefire lists test classes by reflection on a class
 * path without the engine's module when each class runs in a JVM of its own
 * (tests/isolated-runs.sh), so engine types must stay out of test classes' member signatures.
 */
final class TinyPagedKv {
    static final int BLOCKS = 4;
    static final int BLOCK = 16;

    private TinyPagedKv() {
    }

    static PagedKvCache create(Arena arena) {
        long bytes = PagedKvCache.layerBytes(PagedLayout.FLASH_ATTENTION, BLOCKS, BLOCK, 2, 8, DType.BFLOAT16);
        List<MemorySegment> layers = new ArrayList<>();
        for (int l = 0; l < 3; l++) {
            layers.add(arena.allocate(bytes, 64));
        }
        return new PagedKvCache(layers, PagedLayout.FLASH_ATTENTION, BLOCKS, BLOCK, 2, 8, DType.BFLOAT16);
    }

    /** Inverts one byte of a token's vector. */
    static void flip(PagedKvCache kv, int layer, int plane, long slot, int byteInVector) {
        MemorySegment s = kv.layers().get(layer);
        long at = kv.offset(plane, slot) + byteInVector;
        s.set(ValueLayout.JAVA_BYTE, at, (byte) ~s.get(ValueLayout.JAVA_BYTE, at));
    }
}
