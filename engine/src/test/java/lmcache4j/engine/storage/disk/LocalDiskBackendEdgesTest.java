package lmcache4j.engine.storage.disk;

import static lmcache4j.engine.storage.TestChunks.chunk;
import static lmcache4j.engine.storage.TestChunks.key;
import static lmcache4j.engine.storage.TestChunks.keys;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import lmcache4j.allocator.MemoryObj;
import lmcache4j.engine.metrics.EngineMetrics;
import lmcache4j.engine.storage.AllocationMode;
import lmcache4j.engine.storage.TestChunks;
import lmcache4j.engine.storage.cpu.LocalCpuBackend;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The disk tier at its capacity's edges (a directory exactly full, every file pinned, a smaller
 * capacity after a restart), a repeated put, a closed tier, and the byte count kept in step with
 * the files on disk.
 */
class LocalDiskBackendEdgesTest {
    /** One 64 KiB chunk's file: the 4 KiB header and the payload, already whole blocks. */
    private static final long FILE_BYTES = 4096 + TestChunks.CHUNK_BYTES;

    private static LocalDiskBackend disk(Path dir, LocalCpuBackend cpu, long capacityBytes) throws IOException {
        return new LocalDiskBackend(new ChunkFiles(dir, false, false), cpu, capacityBytes, "LRU", 1, 16);
    }

    /** Writes chunk {@code i} (bytes all {@code i}) through the tier and waits for it. */
    private static void write(LocalDiskBackend disk, LocalCpuBackend cpu, int i) throws InterruptedException {
        MemoryObj obj = chunk(cpu, i, AllocationMode.EVICT).orElseThrow();
        disk.batchedSubmitPut(List.of(key(i)), List.of(obj));
        obj.release();
        disk.awaitPuts();
    }

    private static long chunkFiles(Path dir) throws IOException {
        try (var list = Files.list(dir)) {
            return list.filter(p -> p.getFileName().toString().endsWith(".lmc")).count();
        }
    }

    @Test
    void aCapacityThatIsNotPositiveIsRefusedByName(@TempDir Path dir) {
        try (LocalCpuBackend cpu = TestChunks.cpuTier(1, "LRU", 1)) {
            for (long bad : new long[] {0, -1}) {
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> disk(dir, cpu, bad));
                assertTrue(e.getMessage().contains("max_local_disk_size must be positive, was " + bad), e.getMessage());
            }
        }
    }

    @Test
    void aDirectoryExactlyFullEvictsNothingAndOneMoreFileEvictsTheLeastRecent(@TempDir Path dir) throws Exception {
        try (LocalCpuBackend cpu = TestChunks.cpuTier(2, "LRU", 1);
             LocalDiskBackend disk = disk(dir, cpu, 2 * FILE_BYTES)) {
            write(disk, cpu, 0);
            write(disk, cpu, 1);
            assertEquals(0, disk.stats().evictions(), "two files fill the capacity exactly: nothing evicted");
            assertEquals(2 * FILE_BYTES, disk.stats().usedBytes());
            assertEquals(2, disk.stats().writes());
            write(disk, cpu, 2);
            assertEquals(1, disk.stats().evictions());
            assertFalse(disk.contains(key(0), false));
            assertTrue(disk.contains(key(1), false) && disk.contains(key(2), false));
            assertEquals(2 * FILE_BYTES, disk.stats().usedBytes(), "the evicted file's bytes were given back");
            assertEquals(Set.of(key(1), key(2)), Set.copyOf(disk.residentKeys().orElseThrow()));
        }
    }

    @Test
    void aPutThatCannotMakeRoomIsRejectedAndGivesItsReservationBack(@TempDir Path dir) throws Exception {
        try (LocalCpuBackend cpu = TestChunks.cpuTier(2, "LRU", 1);
             LocalDiskBackend disk = disk(dir, cpu, FILE_BYTES)) {
            write(disk, cpu, 0);
            assertTrue(disk.contains(key(0), true), "pinned by a lookup: not evictable");
            write(disk, cpu, 1);
            assertEquals(1, disk.stats().rejectedPuts());
            assertEquals(0, disk.stats().evictions());
            assertFalse(disk.contains(key(1), false));
            assertTrue(disk.unpin(key(0)));
            assertFalse(disk.unpin(key(0)), "its one pin is gone");
            write(disk, cpu, 2);
            assertTrue(disk.contains(key(2), false), "the rejected put reserved nothing that stayed");
            assertEquals(1, disk.stats().evictions());
            assertEquals(FILE_BYTES, disk.stats().usedBytes());
            assertEquals(0, cpu.allocator().stats().liveObjects(), "no write job kept a reference");
        }
    }

    @Test
    void aKeyAlreadyOnDiskIsNotWrittenAgainAndMismatchedListsAreRefused(@TempDir Path dir) throws Exception {
        try (LocalCpuBackend cpu = TestChunks.cpuTier(2, "LRU", 1);
             LocalDiskBackend disk = disk(dir, cpu, 4 * FILE_BYTES)) {
            write(disk, cpu, 0);
            MemoryObj other = chunk(cpu, 7, AllocationMode.EVICT).orElseThrow();
            disk.batchedSubmitPut(List.of(key(0)), List.of(other));
            disk.awaitPuts();
            assertEquals(1, other.refCount(), "no write job took a reference");
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> disk.batchedSubmitPut(keys(0, 2), List.of(other)));
            assertEquals("2 keys but 1 objects", e.getMessage());
            other.release();
            assertEquals(1, disk.stats().writes());
            MemoryObj got = disk.getBlocking(key(0)).orElseThrow();
            assertEquals(0, TestChunks.marker(got), "the first chunk's bytes");
            got.release();
            assertEquals(1, disk.stats().reads());
        }
    }

    @Test
    void removeGivesTheBytesBackAndDeletesTheFile(@TempDir Path dir) throws Exception {
        try (LocalCpuBackend cpu = TestChunks.cpuTier(2, "LRU", 1);
             LocalDiskBackend disk = disk(dir, cpu, 4 * FILE_BYTES)) {
            write(disk, cpu, 0);
            write(disk, cpu, 1);
            long before = chunkFiles(dir);
            assertTrue(disk.remove(key(0)));
            assertFalse(disk.remove(key(0)));
            assertEquals(FILE_BYTES, disk.stats().usedBytes());
            assertEquals(1, disk.stats().chunks());
            disk.close(); // finishes the queued delete
            assertEquals(before - 1, chunkFiles(dir));
        }
    }

    @Test
    void aSmallerCapacityAfterARestartKeepsWhatFitsAndDeletesTheRest(@TempDir Path dir) throws Exception {
        try (LocalCpuBackend cpu = TestChunks.cpuTier(2, "LRU", 1);
             LocalDiskBackend disk = disk(dir, cpu, 4 * FILE_BYTES)) {
            for (int i = 0; i < 3; i++) {
                write(disk, cpu, i);
            }
        }
        try (LocalCpuBackend cpu = TestChunks.cpuTier(2, "LRU", 1);
             LocalDiskBackend disk = disk(dir, cpu, 2 * FILE_BYTES)) {
            assertEquals(3, disk.recovery().chunks().size());
            assertEquals(2, disk.stats().chunks(), "two files fit exactly");
            assertEquals(2 * FILE_BYTES, disk.stats().usedBytes());
            assertEquals(2, chunkFiles(dir), "the third was deleted");
        }
    }

    @Test
    void aClosedTierServesNothingAndTakesNoPutsAndClosesOnce(@TempDir Path dir) throws Exception {
        LocalCpuBackend cpu = TestChunks.cpuTier(2, "LRU", 1);
        LocalDiskBackend disk = disk(dir, cpu, 4 * FILE_BYTES);
        write(disk, cpu, 0);
        disk.close();
        assertTrue(disk.getBlocking(key(0)).isEmpty());
        assertTrue(disk.prefetch(key(0)).get(10, TimeUnit.SECONDS).isEmpty());
        MemoryObj obj = chunk(cpu, 1, AllocationMode.EVICT).orElseThrow();
        disk.batchedSubmitPut(List.of(key(1)), List.of(obj));
        assertEquals(1, obj.refCount(), "a closed tier queues nothing");
        obj.release();
        disk.close();
        assertEquals(0, cpu.allocator().stats().liveObjects());
        cpu.close();
    }

    @Test
    void aPrefetchLoadsTheChunkAndAMissingKeyIsAnEmptyAnswer(@TempDir Path dir) throws Exception {
        try (LocalCpuBackend cpu = TestChunks.cpuTier(2, "LRU", 1);
             LocalDiskBackend disk = disk(dir, cpu, 4 * FILE_BYTES)) {
            write(disk, cpu, 3);
            MemoryObj got = disk.prefetch(key(3)).get(10, TimeUnit.SECONDS).orElseThrow();
            assertEquals(3, TestChunks.marker(got));
            assertEquals(1, got.refCount(), "the caller's reference only");
            got.release();
            assertTrue(disk.prefetch(key(4)).get(10, TimeUnit.SECONDS).isEmpty());
            assertTrue(disk.prefetching().isPresent());
        }
    }

    @Test
    void itsMetricsReadTheLiveCounters(@TempDir Path dir) throws Exception {
        try (LocalCpuBackend cpu = TestChunks.cpuTier(2, "LRU", 1);
             LocalDiskBackend disk = disk(dir, cpu, FILE_BYTES)) {
            EngineMetrics metrics = new EngineMetrics("m", 0);
            disk.publishMetrics(metrics);
            write(disk, cpu, 0);
            write(disk, cpu, 1); // evicts 0
            disk.getBlocking(key(1)).orElseThrow().release();
            var readings = metrics.snapshot().tierReadings();
            assertEquals(FILE_BYTES, readings.get("lmcache:local_storage_usage"));
            assertEquals(2, readings.get("lmcache:local_disk_write_count"));
            assertEquals(1, readings.get("lmcache:local_disk_read_count"));
            assertEquals(1, readings.get("lmcache:local_disk_evict_count"));
            assertEquals(0, readings.get("lmcache:local_disk_dropped_puts"));
            assertEquals(0, readings.get("lmcache:local_disk_corrupt_reads"));
        }
    }
}
