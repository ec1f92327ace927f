package lmcache4j.allocator.host;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.concurrent.TimeUnit;

import lmcache4j.cuda.CudaRuntime;
import org.junit.jupiter.api.Test;

class SharedMemoryArenaTest {
    private static String uniqueName(String what) {
        return "lmcache4j-test-" + what + "-" + ProcessHandle.current().pid() + "-" + System.nanoTime();
    }

    @Test
    void theFileIsCreatedWithMode0600AndTheRequestedSize() throws IOException {
        String name = uniqueName("mode");
        try (SharedMemoryArena arena = SharedMemoryArena.create(name, 1 << 20)) {
            Path file = Path.of("/dev/shm", name);
            assertEquals(file, arena.path());
            assertEquals(name, arena.name());
            assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(file)));
            assertEquals(1 << 20, Files.size(file));
            assertEquals(1 << 20, arena.byteSize());
            assertEquals(HostArena.Kind.SHARED_MEMORY, arena.kind());
            assertEquals(0, arena.segment().address() % 4096, "page aligned, as the tensor allocator needs");
        }
    }

    /** Backed at creation: a /dev/shm filled later by someone else cannot make a first write raise SIGBUS. */
    @Test
    void everyPageIsBackedWhenTheArenaIsCreated() throws IOException {
        long bytes = 64L << 20;
        long before = Files.getFileStore(SharedMemoryArena.DEV_SHM).getUsableSpace();
        try (SharedMemoryArena arena = SharedMemoryArena.create(uniqueName("backed"), bytes)) {
            long taken = before - Files.getFileStore(SharedMemoryArena.DEV_SHM).getUsableSpace();
            assertTrue(taken >= bytes - (4L << 20), "/dev/shm lost " + taken + " bytes for a " + bytes + "-byte arena: "
                    + arena.description());
        }
    }

    @Test
    void aSecondArenaOfTheSameNameIsRefusedAndTheFirstIsUntouched() {
        String name = uniqueName("dup");
        try (SharedMemoryArena first = SharedMemoryArena.create(name, 8192)) {
            first.segment().set(ValueLayout.JAVA_LONG, 0, 42L);
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> SharedMemoryArena.create(name, 8192));
            assertTrue(e.getMessage().contains("already exists"), e.getMessage());
            assertTrue(Files.exists(first.path()), "the refused second start must not unlink the first's file");
            assertEquals(42L, first.segment().get(ValueLayout.JAVA_LONG, 0));
        }
    }

    @Test
    void closeUnmapsAndRemovesTheFileAndIsIdempotent() {
        SharedMemoryArena arena = SharedMemoryArena.create(uniqueName("close"), 8192);
        MemorySegment slice = arena.segment().asSlice(4096, 16);
        Path file = arena.path();
        arena.close();
        arena.close();
        assertFalse(Files.exists(file));
        assertThrows(IllegalStateException.class, () -> slice.get(ValueLayout.JAVA_BYTE, 0));
    }

    @Test
    void namesThatLeaveTheDirectoryOrPeersCannotOpenAreRefused() {
        String tooLong = "a".repeat(SharedMemoryArena.MAX_NAME_LENGTH + 1);
        for (String bad : List.of("", "a/b", "/lead", "..", "x..y", ".", "nul\0byte", tooLong)) {
            assertThrows(IllegalArgumentException.class, () -> SharedMemoryArena.create(bad, 8192), bad);
        }
        assertThrows(IllegalArgumentException.class, () -> SharedMemoryArena.create(null, 8192));
        assertThrows(IllegalArgumentException.class, () -> SharedMemoryArena.create(uniqueName("zero"), 0));
        String longest = "b".repeat(SharedMemoryArena.MAX_NAME_LENGTH - 20) + System.nanoTime() % 100000;
        try (SharedMemoryArena ok = SharedMemoryArena.create(longest, 4096)) {
            assertEquals(longest, ok.name());
        }
    }

    @Test
    void aSizeBeyondTheFreeSpaceIsAClearErrorThatLeavesNoFile() throws IOException {
        String name = uniqueName("huge");
        long free = Files.getFileStore(SharedMemoryArena.DEV_SHM).getUsableSpace();
        long wanted = free + (1L << 30);
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> SharedMemoryArena.create(name, wanted));
        assertTrue(e.getMessage().contains("needs " + wanted + " bytes"), e.getMessage());
        assertTrue(e.getMessage().contains("free"), e.getMessage());
        assertFalse(Files.exists(SharedMemoryArena.DEV_SHM.resolve(name)));
    }

    @Test
    void aStartThatFailsAfterCreatingTheFileLeavesNoFile() {
        String name = uniqueName("failed");
        MemorySegment[] mapped = new MemorySegment[1];
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> SharedMemoryArena.create(SharedMemoryArena.DEV_SHM, name, 8192, segment -> {
                    mapped[0] = segment;
                    assertTrue(Files.exists(SharedMemoryArena.DEV_SHM.resolve(name)));
                    throw new IllegalStateException("registration refused");
                }));
        assertEquals("registration refused", e.getMessage());
        assertFalse(Files.exists(SharedMemoryArena.DEV_SHM.resolve(name)));
        assertThrows(IllegalStateException.class, () -> mapped[0].get(ValueLayout.JAVA_BYTE, 0), "the mapping is gone too");
    }

    @Test
    void anUnavailableCudaRuntimeLeavesTheArenaUnregistered() {
        CudaRuntime missing = CudaRuntime.load(Path.of("/nonexistent/libcudart.so"));
        try (SharedMemoryArena arena = SharedMemoryArena.create(uniqueName("nocuda"), 8192, missing)) {
            assertEquals(HostArena.Kind.SHARED_MEMORY, arena.kind());
            assertTrue(arena.description().contains(arena.path().toString()), arena.description());
        }
    }

    @Test
    void anotherMappingOfTheFileSeesTheBytesBothWays() throws IOException {
        try (SharedMemoryArena arena = SharedMemoryArena.create(uniqueName("peer"), 1 << 16);
                FileChannel peer = FileChannel.open(arena.path(), StandardOpenOption.READ, StandardOpenOption.WRITE);
                Arena peerArena = Arena.ofConfined()) {
            MemorySegment view = peer.map(FileChannel.MapMode.READ_WRITE, 0, arena.byteSize(), peerArena);
            arena.segment().set(ValueLayout.JAVA_LONG, 4096, 0x1122334455667788L);
            assertEquals(0x1122334455667788L, view.get(ValueLayout.JAVA_LONG, 4096));
            view.set(ValueLayout.JAVA_INT, 60000, 777);
            assertEquals(777, arena.segment().get(ValueLayout.JAVA_INT, 60000));
        }
    }

    @Test
    void pythonsSharedMemoryOpensItByName() throws Exception {
        String python = System.getProperty("lmcache4j.python", "");
        if (python.isBlank()) {
            python = "python3";
        }
        String name = uniqueName("py");
        try (SharedMemoryArena arena = SharedMemoryArena.create(name, 1 << 16)) {
            byte[] pattern = "lmcache4j shared pool".getBytes(StandardCharsets.US_ASCII);
            MemorySegment.copy(pattern, 0, arena.segment(), ValueLayout.JAVA_BYTE, 8192, pattern.length);
            // the peer reads our bytes, writes its own, and keeps the resource tracker from unlinking
            String script = String.join("\n",
                    "import sys",
                    "from multiprocessing import shared_memory, resource_tracker",
                    "shm = shared_memory.SharedMemory(sys.argv[1])",
                    "try:",
                    "    resource_tracker.unregister(shm._name, 'shared_memory')",
                    "except Exception:",
                    "    pass",
                    "sys.stdout.write(bytes(shm.buf[8192:8192 + " + pattern.length + "]).decode('ascii'))",
                    "shm.buf[100:103] = b'abc'",
                    "sys.stdout.write(' ' + str(shm.size))",
                    "shm.close()");
            Process process;
            try {
                process = new ProcessBuilder(python, "-c", script, name).redirectErrorStream(true).start();
            } catch (IOException e) {
                // python3 is one of the launcher's own prerequisites, and shared_memory is in its standard library
                throw new AssertionError("no python to play the peer: " + e.getMessage(), e);
            }
            assertTrue(process.waitFor(60, TimeUnit.SECONDS), "python did not finish");
            String out = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertEquals(0, process.exitValue(), out);
            assertEquals("lmcache4j shared pool " + arena.byteSize(), out.strip());
            byte[] back = new byte[3];
            MemorySegment.copy(arena.segment(), ValueLayout.JAVA_BYTE, 100, back, 0, 3);
            assertArrayEquals("abc".getBytes(StandardCharsets.US_ASCII), back);
            assertTrue(Files.exists(arena.path()), "the peer must not unlink the server's segment");
        }
    }
}
