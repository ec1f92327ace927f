package lmcache4j.cuda.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import lmcache4j.cuda.posix.Posix;
import lmcache4j.cuda.posix.PosixException;

/**
 * The streaming copy against the real CPU: each instruction set this machine runs copies exactly
 * what {@link MemorySegment#copy} copies, and the batch refuses every run the machine code could
 * not take (misaligned, short, overlapping, heap, read-only, out of bounds, dead or foreign memory).
 */
class StreamingCopyTest {
    private static boolean x86Linux() {
        return System.getProperty("os.name").startsWith("Linux")
                && (System.getProperty("os.arch").equals("amd64") || System.getProperty("os.arch").equals("x86_64"));
    }

    private static boolean cpuFlag(String flag) throws IOException {
        return Files.readAllLines(Path.of("/proc/cpuinfo")).stream().filter(l -> l.startsWith("flags")).findFirst()
                .map(l -> List.of(l.substring(l.indexOf(':') + 1).trim().split("\\s+")).contains(flag)).orElse(false);
    }

    @Test
    void theMachineGetsItsBestInstructionSet() throws IOException {
        if (!x86Linux()) {
            assertTrue(StreamingCopy.machine().isEmpty());
            Throwable cause = StreamingCopy.unavailabilityCause().orElseThrow();
            assertTrue(cause.getMessage().contains("x86-64 Linux"), cause.toString());
            return;
        }
        StreamingCopy copy = StreamingCopy.machine().orElseThrow(StreamingCopyTest::unavailable);
        assertTrue(StreamingCopy.unavailabilityCause().isEmpty());
        assertEquals(cpuFlag("avx2") ? StreamingCopy.Isa.AVX2 : StreamingCopy.Isa.SSE2, copy.isa());
        assertTrue(StreamingCopy.supportedIsas().contains(StreamingCopy.Isa.SSE2));
        assertEquals(cpuFlag("avx2"), StreamingCopy.supportedIsas().contains(StreamingCopy.Isa.AVX2));
    }

    /**
     * A system that forbids executable anonymous memory (SELinux execmem, PaX, a seccomp policy; a
     * JVM cannot run under Linux's own PR_SET_MDWE to try it for real) refuses the page: the load
     * says so, naming the cause, instead of failing the caller, which copies without streaming.
     */
    @Test
    void aPageTheSystemWillNotMakeExecutableIsARefusalThatSaysWhy() {
        for (StreamingCopy.Isa isa : StreamingCopy.supportedIsas()) {
            List<Long> pages = new ArrayList<>();
            UnsupportedOperationException e = assertThrows(UnsupportedOperationException.class,
                    () -> StreamingCopy.loadNow(isa, page -> {
                        pages.add(page.address());
                        throw new PosixException("mprotect(0x" + Long.toHexString(page.address()) + ", 4096, prot=0x5)",
                                Posix.EACCES, "the system forbids executable anonymous memory (SELinux execmem, PaX or a "
                                + "seccomp policy)");
                    }));
            assertEquals(1, pages.size());
            assertTrue(e.getMessage().startsWith("the streaming copy cannot be made executable: mprotect("), e.getMessage());
            assertTrue(e.getMessage().contains("SELinux execmem"), e.getMessage());
        }
        if (x86Linux()) {
            assertFalse(StreamingCopy.supportedIsas().isEmpty(), "SSE2 at least on x86-64 Linux");
        }
    }

    @Test
    void eachInstructionSetLoadsExactlyWhereTheCpuRunsIt() {
        for (StreamingCopy.Isa isa : StreamingCopy.Isa.values()) {
            if (StreamingCopy.supportedIsas().contains(isa)) {
                StreamingCopy copy = StreamingCopy.load(isa);
                assertEquals(isa, copy.isa());
                assertTrue(copy == StreamingCopy.load(isa), "loaded once per process");
            } else {
                UnsupportedOperationException e = assertThrows(UnsupportedOperationException.class, () -> StreamingCopy.load(isa));
                assertTrue(e.getMessage().contains(isa.label()), e.getMessage());
            }
        }
    }

    /** Random gathers and scatters over several sources, compared byte for byte with MemorySegment.copy. */
    @ParameterizedTest
    @EnumSource(StreamingCopy.Isa.class)
    void copiesExactlyWhatMemorySegmentCopyCopies(StreamingCopy.Isa isa) {
        if (!StreamingCopy.supportedIsas().contains(isa)) {
            return; // refused with its reason, checked above
        }
        StreamingCopy copy = StreamingCopy.load(isa);
        Random random = new Random(20261126L + isa.ordinal());
        try (Arena arena = Arena.ofShared(); StreamingCopyBatch batch = copy.newBatch(5)) {
            List<MemorySegment> sources = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                MemorySegment s = arena.allocate(256 << 10, 4096);
                for (long b = 0; b < s.byteSize(); b += 8) {
                    s.set(ValueLayout.JAVA_LONG, b, random.nextLong());
                }
                sources.add(s);
            }
            MemorySegment actual = arena.allocate(512 << 10, 4096);
            MemorySegment expected = arena.allocate(512 << 10, 4096);
            int streamed = 0;
            int refused = 0;
            for (int round = 0; round < 2_000; round++) {
                MemorySegment src = sources.get(random.nextInt(sources.size()));
                long length = random.nextInt(4) == 0 ? 1 + random.nextInt(3 * isa.granule())
                        : (long) isa.granule() * (1 + random.nextInt(64));
                long srcOffset = random.nextLong(src.byteSize() - length + 1);
                long dstOffset = random.nextInt(3) == 0 ? random.nextLong(actual.byteSize() - length + 1)
                        : random.nextLong((actual.byteSize() - length) / isa.alignment() + 1) * isa.alignment();
                MemorySegment.copy(src, srcOffset, expected, dstOffset, length);
                if (batch.add(src, srcOffset, actual, dstOffset, length)) {
                    streamed++;
                    assertTrue(length % isa.granule() == 0 && (actual.address() + dstOffset) % isa.alignment() == 0);
                } else {
                    refused++;
                    batch.flush(); // runs overlap here: keep the order
                    MemorySegment.copy(src, srcOffset, actual, dstOffset, length);
                }
                if (random.nextInt(50) == 0) {
                    batch.flush();
                    assertEquals(-1, actual.mismatch(expected), "after round " + round);
                }
            }
            batch.flush();
            assertEquals(-1, actual.mismatch(expected));
            assertTrue(streamed > 1_000 && refused > 200, streamed + " streamed, " + refused + " refused");
        }
    }

    @Test
    void refusesWhatTheMachineCodeCannotTake() {
        StreamingCopy copy = machineCopy();
        if (copy == null) {
            return;
        }
        int granule = copy.isa().granule();
        try (Arena arena = Arena.ofConfined(); StreamingCopyBatch batch = copy.newBatch(4)) {
            MemorySegment src = arena.allocate(64 << 10, 4096);
            MemorySegment dst = arena.allocate(64 << 10, 4096);
            assertFalse(batch.add(src, 0, dst, 1, granule), "misaligned destination");
            assertFalse(batch.add(src, 0, dst, 0, granule + 1), "not a whole number of steps");
            assertFalse(batch.add(src, 0, dst, 0, 0), "empty");
            assertFalse(batch.add(src, 0, src, granule, 4L * granule), "overlapping");
            assertFalse(batch.add(MemorySegment.ofArray(new byte[4 * granule]), 0, dst, 0, granule), "heap source");
            assertFalse(batch.add(src, 0, MemorySegment.ofArray(new byte[4 * granule]), 0, granule), "heap destination");
            assertFalse(batch.add(src, 0, dst.asReadOnly(), 0, granule), "read-only destination");
            assertThrows(IndexOutOfBoundsException.class, () -> batch.add(src, src.byteSize() - granule + 8, dst, 0, granule));
            assertThrows(IndexOutOfBoundsException.class, () -> batch.add(src, 0, dst, dst.byteSize() - granule + 32, granule));
            assertThrows(IndexOutOfBoundsException.class, () -> batch.add(src, -1, dst, 0, granule));
            assertEquals(0, batch.pending());
            assertEquals(0, batch.streamedBytes());
            assertTrue(batch.add(src, 8, src, 32L << 10, granule), "apart within one segment");
            assertEquals(1, batch.pending());
        }
    }

    @Test
    void aClosedArenaIsAnExceptionNotAFault() {
        StreamingCopy copy = machineCopy();
        if (copy == null) {
            return;
        }
        try (StreamingCopyBatch batch = copy.newBatch(4)) {
            Arena arena = Arena.ofShared();
            MemorySegment src = arena.allocate(4096, 4096);
            MemorySegment dst = arena.allocate(4096, 4096);
            assertTrue(batch.add(src, 0, dst, 0, 1024));
            arena.close();
            assertThrows(IllegalStateException.class, batch::flush);
            assertEquals(0, batch.pending(), "the failed runs are dropped, not retried");
        }
    }

    @Test
    void memoryConfinedToAnotherThreadIsRefusedByTheLinker() throws InterruptedException {
        StreamingCopy copy = machineCopy();
        if (copy == null) {
            return;
        }
        try (Arena mine = Arena.ofConfined()) {
            MemorySegment src = mine.allocate(4096, 4096);
            MemorySegment dst = mine.allocate(4096, 4096);
            AtomicReference<Throwable> failure = new AtomicReference<>();
            Thread other = Thread.ofPlatform().start(() -> {
                try (StreamingCopyBatch batch = copy.newBatch(4)) {
                    batch.add(src, 0, dst, 0, 1024);
                    batch.flush();
                } catch (Throwable t) {
                    failure.set(t);
                }
            });
            other.join();
            assertTrue(failure.get() instanceof WrongThreadException, String.valueOf(failure.get()));
        }
    }

    @Test
    void streamedBytesAreVisibleToAnotherThreadAfterFlush() throws InterruptedException {
        StreamingCopy copy = machineCopy();
        if (copy == null) {
            return;
        }
        try (Arena arena = Arena.ofShared()) {
            MemorySegment src = arena.allocate(1 << 20, 4096);
            MemorySegment dst = arena.allocate(1 << 20, 4096);
            src.fill((byte) 0x5a);
            Thread writer = Thread.ofPlatform().start(() -> {
                try (StreamingCopyBatch batch = copy.newBatch(64)) {
                    for (long off = 0; off < src.byteSize(); off += 32 << 10) {
                        assertTrue(batch.add(src, off, dst, off, 32 << 10));
                    }
                }
            });
            writer.join();
            assertEquals(-1, dst.mismatch(src));
        }
    }

    @Test
    void aBatchRejectsAnAbsurdCapacity() {
        StreamingCopy copy = machineCopy();
        if (copy == null) {
            return;
        }
        assertThrows(IllegalArgumentException.class, () -> copy.newBatch(0));
        assertThrows(IllegalArgumentException.class, () -> copy.newBatch((1 << 20) + 1));
    }

    /**
     * The machine's routine; null off x86-64 Linux, where there is none (checked here) and every
     * caller copies with MemorySegment.copy, so the routine's own tests have nothing to run.
     */
    private static StreamingCopy machineCopy() {
        if (!x86Linux()) {
            assertTrue(StreamingCopy.machine().isEmpty());
            return null;
        }
        return StreamingCopy.machine().orElseThrow(StreamingCopyTest::unavailable);
    }

    private static AssertionError unavailable() {
        return new AssertionError("no streaming copy on x86-64 Linux", StreamingCopy.unavailabilityCause().orElse(null));
    }
}
