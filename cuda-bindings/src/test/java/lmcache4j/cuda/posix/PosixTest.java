package lmcache4j.cuda.posix;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.BitSet;

import org.junit.jupiter.api.Test;

class PosixTest {
    @Test
    void mmapMlockMunmapRoundTrip() {
        long bytes = 1 << 20; // under the default 8 MiB memlock limit
        try (AnonymousMapping mapping = AnonymousMapping.map(bytes, false, false)) {
            MemorySegment memory = mapping.segment();
            assertEquals(0, memory.address() % Posix.pageSize(), "mmap memory is page-aligned");
            assertEquals(0L, memory.get(ValueLayout.JAVA_LONG, bytes - 8), "anonymous memory is zero-filled");
            Posix.mlock(memory);
            memory.set(ValueLayout.JAVA_LONG, 4096, 0x1234_5678_9abc_def0L);
            assertEquals(0x1234_5678_9abc_def0L, memory.get(ValueLayout.JAVA_LONG, 4096));
            Posix.madvise(memory, Posix.MADV_HUGEPAGE);
            Posix.munlock(memory);
        }
    }

    @Test
    void mprotectChangesAPageAndNamesItsErrors() {
        try (AnonymousMapping mapping = AnonymousMapping.map(2 * Posix.pageSize(), false, false)) {
            MemorySegment page = mapping.segment().asSlice(0, Posix.pageSize());
            Posix.mprotect(page, Posix.PROT_READ);
            assertEquals(0L, page.get(ValueLayout.JAVA_LONG, 0), "still readable");
            Posix.mprotect(page, Posix.PROT_READ | Posix.PROT_WRITE);
            page.set(ValueLayout.JAVA_LONG, 0, 42L);
            assertEquals(42L, page.get(ValueLayout.JAVA_LONG, 0));
            PosixException e = assertThrows(PosixException.class,
                    () -> Posix.mprotect(mapping.segment().asSlice(1, 64), Posix.PROT_READ));
            assertTrue(e.getMessage().contains("mprotect") && e.getMessage().contains("EINVAL"), e.getMessage());
        }
    }

    @Test
    void accessAfterCloseThrowsInsteadOfTouchingUnmappedMemory() {
        AnonymousMapping mapping = AnonymousMapping.map(8192, false, false);
        MemorySegment memory = mapping.segment();
        mapping.close();
        mapping.close(); // idempotent
        assertThrows(IllegalStateException.class, () -> memory.get(ValueLayout.JAVA_BYTE, 0));
        assertThrows(IllegalStateException.class, mapping::segment);
    }

    @Test
    void mappingsAreRoundedToWholePages() {
        try (AnonymousMapping mapping = AnonymousMapping.map(1, false, false)) {
            assertEquals(Posix.pageSize(), mapping.byteSize());
        }
        assertThrows(IllegalArgumentException.class, () -> AnonymousMapping.map(0, false, false));
        assertThrows(IllegalArgumentException.class, () -> AnonymousMapping.map(-5, false, false));
    }

    @Test
    void aBadCallReportsItsErrno() {
        try (AnonymousMapping mapping = AnonymousMapping.map(8192, false, false)) {
            PosixException e = assertThrows(PosixException.class, () -> Posix.madvise(mapping.segment(), 12345));
            assertEquals(Posix.EINVAL, e.errno());
            assertEquals("EINVAL", e.errnoName());
            assertTrue(e.getMessage().startsWith("madvise(0x"), e.getMessage());
            assertTrue(e.getMessage().contains("EINVAL (22): Invalid argument"), e.getMessage());
        }
        PosixException unaligned = assertThrows(PosixException.class, () -> Posix.munmap(MemorySegment.ofAddress(1), 4096));
        assertEquals(Posix.EINVAL, unaligned.errno());
    }

    @Test
    void mbindToANodeThatDoesNotExistFailsWithItsErrno() {
        try (AnonymousMapping mapping = AnonymousMapping.map(8192, false, false)) {
            BitSet nodes = new BitSet();
            nodes.set(1000);
            PosixException e = assertThrows(PosixException.class, () -> Posix.mbind(mapping.segment(), Posix.MPOL_BIND, nodes, 0));
            assertTrue(e.errno() == Posix.EINVAL || e.errno() == Posix.EPERM, e.getMessage());
            assertTrue(e.call().startsWith("mbind("), e.call());
        }
    }

    @Test
    void mbindToTheCurrentNodeIsObservedByGetMempolicy() {
        int node = Posix.getcpu().node();
        try (AnonymousMapping mapping = AnonymousMapping.map(1 << 16, false, false)) {
            BitSet nodes = new BitSet();
            nodes.set(node);
            Posix.mbind(mapping.segment(), Posix.MPOL_BIND, nodes, 0);
            mapping.segment().fill((byte) 1); // fault the pages in under the policy
            assertEquals(node, Posix.nodeOfAddress(mapping.segment()));
        }
    }

    @Test
    void hugeTlbWithoutReservedPagesIsRefusedWithAHint() throws IOException {
        Path reserved = Path.of("/proc/sys/vm/nr_hugepages");
        if (!Files.isReadable(reserved) || Long.parseLong(Files.readString(reserved).strip()) != 0) {
            // Pages are reserved: the mapping works, so check that instead.
            try (AnonymousMapping m = AnonymousMapping.map(2 << 20, true, false)) {
                assertEquals(2 << 20, m.byteSize());
            }
            return;
        }
        PosixException e = assertThrows(PosixException.class, () -> AnonymousMapping.map(2 << 20, true, false));
        assertEquals(Posix.ENOMEM, e.errno());
        assertTrue(e.getMessage().contains("nr_hugepages"), e.getMessage());
    }

    @Test
    void limitsAndLocationAreReadable() {
        ResourceLimit limit = Posix.memlockLimit();
        assertTrue(limit.hard() == ResourceLimit.UNLIMITED || limit.soft() != ResourceLimit.UNLIMITED
                && Long.compareUnsigned(limit.soft(), limit.hard()) <= 0, limit::toString);
        CpuLocation here = Posix.getcpu();
        assertTrue(here.cpu() >= 0 && here.node() >= 0, here::toString);
        assertEquals("Cannot allocate memory", Posix.strerror(Posix.ENOMEM));
        assertEquals(4096 <= Posix.pageSize(), true);
    }

    @Test
    void mallocAndFreeRoundTrip() {
        MemorySegment m = Posix.malloc(1000);
        assertEquals(1000, m.byteSize());
        m.fill((byte) 3);
        assertEquals(3, m.get(ValueLayout.JAVA_BYTE, 999));
        Posix.free(m);
        assertThrows(IllegalArgumentException.class, () -> Posix.malloc(0));
    }

    @Test
    void errnoNamesAreSymbolic() {
        assertEquals("ENOMEM", Errno.name(12));
        assertEquals("EPERM", Errno.name(1));
        assertEquals("errno 9999", Errno.name(9999));
        assertEquals("errno 0", Errno.name(0));
    }
}
