package lmcache4j.allocator.host;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.ValueLayout;

import lmcache4j.allocator.HostArenaOptions;
import lmcache4j.cuda.CudaRuntime;
import lmcache4j.cuda.posix.Posix;
import org.junit.jupiter.api.Test;

class HostArenaTest {
    @Test
    void withoutUsableCudaArenasAreMmapMemoryWithTheOptionsApplied() {
        CudaRuntime cuda = CudaRuntime.load();
        HostArenaOptions options = HostArenaOptions.DEFAULT.withMlock(true).withNumaNode(Posix.getcpu().node());
        try (HostArena arena = HostArenas.allocate(1 << 20, options, cuda)) {
            if (cuda.isAvailable()) {
                assertEquals(HostArena.Kind.CUDA_REGISTERED_MMAP, arena.kind());
            } else {
                assertEquals(HostArena.Kind.MMAP, arena.kind());
            }
            assertEquals(0, arena.segment().address() % Posix.pageSize());
            assertTrue(arena.description().contains("mlocked"), arena.description());
            assertTrue(arena.description().contains("NUMA node"), arena.description());
            arena.segment().set(ValueLayout.JAVA_LONG, 8, 7L);
            assertEquals(Posix.getcpu().node(), Posix.nodeOfAddress(arena.segment()));
        }
    }

    @Test
    void cudaPinningFallsBackToMmapWhenTheRuntimeIsUnavailable() {
        CudaRuntime missing = CudaRuntime.load(java.nio.file.Path.of("/nonexistent/libcudart.so"));
        try (HostArena arena = HostArenas.allocate(8192, HostArenaOptions.DEFAULT, missing)) {
            assertEquals(HostArena.Kind.MMAP, arena.kind());
        }
    }

    @Test
    void closingInvalidatesEverySliceOfTheArena() {
        HostArena arena = HostArena.allocate(8192, HostArenaOptions.DEFAULT);
        var slice = arena.segment().asSlice(4096, 16);
        arena.close();
        arena.close();
        assertThrows(IllegalStateException.class, () -> slice.get(ValueLayout.JAVA_BYTE, 0));
    }

    @Test
    void aNumaNodeTheMachineLacksIsAnError() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> HostArena.allocate(8192, HostArenaOptions.DEFAULT.withNumaNode(4096)));
        assertTrue(e.getMessage().contains("NUMA node 4096 does not exist"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> HostArena.allocate(0, HostArenaOptions.DEFAULT));
    }
}
