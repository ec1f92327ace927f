package lmcache4j.cuda.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Random;

import org.junit.jupiter.api.Test;

/** glibc's memcpy through the linker: the bytes {@link MemorySegment#copy} moves, and never a run it would refuse. */
class LibcMemcpyTest {
    private static LibcMemcpy memcpy() {
        return LibcMemcpy.machine().orElseThrow(() -> new AssertionError("memcpy did not link",
                LibcMemcpy.unavailabilityCause().orElse(null)));
    }

    private static MemorySegment random(Arena arena, long bytes, long seed) {
        MemorySegment s = arena.allocate(bytes, 64);
        Random random = new Random(seed);
        for (long i = 0; i < bytes; i += 8) {
            s.set(ValueLayout.JAVA_LONG, i, random.nextLong());
        }
        return s;
    }

    @Test
    void copiesWhatMemorySegmentCopyCopies() {
        assertTrue(LibcMemcpy.unavailabilityCause().isEmpty());
        Random random = new Random(27);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment src = random(arena, 1 << 20, 1);
            MemorySegment dst = arena.allocate(1 << 20, 64);
            MemorySegment expected = arena.allocate(1 << 20, 64);
            for (int i = 0; i < 200; i++) {
                long length = random.nextInt(40_000);
                long from = random.nextLong(src.byteSize() - length + 1);
                long to = random.nextLong(dst.byteSize() - length + 1);
                assertTrue(memcpy().copy(src, from, dst, to, length), "native, apart: memcpy's");
                MemorySegment.copy(src, from, expected, to, length);
            }
            assertEquals(-1, dst.mismatch(expected));
        }
    }

    @Test
    void aRunOutsideASegmentIsAnExceptionNotACopy() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment src = random(arena, 4096, 2);
            MemorySegment dst = arena.allocate(4096, 64);
            assertThrows(IndexOutOfBoundsException.class, () -> memcpy().copy(src, 1, dst, 0, 4096));
            assertThrows(IndexOutOfBoundsException.class, () -> memcpy().copy(src, 0, dst, 4000, 97));
            assertThrows(IndexOutOfBoundsException.class, () -> memcpy().copy(src, 0, dst, 0, -1));
            assertEquals(-1, dst.mismatch(arena.allocate(4096)), "nothing written");
        }
    }

    @Test
    void heapReadOnlyAndOverlappingRunsAreLeftToMemorySegmentCopy() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buffer = random(arena, 8192, 3);
            MemorySegment expected = arena.allocate(8192);
            expected.copyFrom(buffer);
            MemorySegment.copy(expected, 0, expected, 100, 4000);
            assertFalse(memcpy().copy(buffer, 0, buffer, 100, 4000), "overlapping: memcpy's result is undefined");
            assertEquals(-1, buffer.mismatch(expected));

            MemorySegment heap = MemorySegment.ofArray(new byte[4096]);
            assertFalse(memcpy().copy(buffer, 0, heap, 0, 4096));
            assertEquals(-1, heap.mismatch(buffer.asSlice(0, 4096)));
            assertThrows(IllegalArgumentException.class, () -> memcpy().copy(heap, 0, buffer.asReadOnly(), 0, 16));
        }
    }

    @Test
    void memoryOfAClosedArenaIsRefusedByTheLinker() {
        Arena arena = Arena.ofShared();
        MemorySegment src = arena.allocate(4096, 64);
        MemorySegment dst = arena.allocate(4096, 64);
        arena.close();
        assertThrows(IllegalStateException.class, () -> memcpy().copy(src, 0, dst, 0, 4096));
    }
}
