package lmcache4j.engine.storage.disk;

import static lmcache4j.engine.storage.TestChunks.chunk;
import static lmcache4j.engine.storage.TestChunks.key;
import static lmcache4j.engine.storage.TestChunks.keys;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

import lmcache4j.allocator.MemoryObj;
import lmcache4j.engine.storage.AllocationMode;
import lmcache4j.engine.storage.StorageManager;
import lmcache4j.engine.storage.TestChunks;
import lmcache4j.engine.storage.cpu.LocalCpuBackend;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class LocalDiskBackendTest {
    private static final long FILE_BYTES = 4096 + TestChunks.CHUNK_BYTES;

    private static LocalDiskBackend disk(Path dir, LocalCpuBackend cpu, int chunks) throws IOException {
        return new LocalDiskBackend(new ChunkFiles(dir, false, false), cpu, chunks * FILE_BYTES, "LRU", 2, 16);
    }

    private static void put(StorageManager storage, LocalCpuBackend cpu, int from, int to) {
        List<MemoryObj> objs = new ArrayList<>();
        for (int i = from; i < to; i++) {
            objs.add(chunk(cpu, i, AllocationMode.EVICT).orElseThrow());
        }
        storage.batchedPut(keys(from, to), objs, Optional.empty());
    }

    @Test
    void chunksSpillToDiskAndComeBackAfterARestart(@TempDir Path dir) throws Exception {
        LocalCpuBackend cpu = TestChunks.cpuTier(4, "LRU", 2);
        LocalDiskBackend disk = disk(dir, cpu, 16);
        try (StorageManager storage = new StorageManager(cpu, List.of(disk))) {
            for (int i = 0; i < 8; i++) { // the CPU tier holds 4; the disk gets all 8
                put(storage, cpu, i, i + 1);
                disk.awaitPuts(); // a chunk being written is shared, so not evictable until then
            }
            assertEquals(8, disk.stats().chunks());
            assertTrue(cpu.size() <= 4);
            for (int i = 0; i < 8; i++) { // evicted chunks are read back from disk, one at a time
                MemoryObj got = storage.get(key(i)).orElseThrow();
                assertEquals(i, TestChunks.marker(got));
                got.release();
            }
        }
        // A new process: the index is rebuilt from the files.
        LocalCpuBackend cpu2 = TestChunks.cpuTier(4, "LRU", 2);
        LocalDiskBackend reopened = disk(dir, cpu2, 16);
        try (StorageManager storage = new StorageManager(cpu2, List.of(reopened))) {
            assertEquals(8, reopened.recovery().chunks().size());
            // the constructor checked every payload before it returned
            assertEquals(new VerificationProgress(8, 8, 0, 0, 8 * FILE_BYTES, reopened.verification().nanos(), true),
                    reopened.verification());
            assertEquals(8, storage.batchedContains(keys(0, 8), false).hits());
            MemoryObj obj = storage.get(key(5)).orElseThrow();
            assertEquals(5, TestChunks.marker(obj));
            obj.release();
        }
    }

    /**
     * A reader that waits for the write count (the MP server's L2, bench mp) then looks the chunk up
     * must find it: the count goes up only once the chunk is indexed.
     */
    @Test
    void aChunkCountedAsWrittenIsFoundAtOnce(@TempDir Path dir) throws Exception {
        int chunks = 300;
        LocalCpuBackend cpu = TestChunks.cpuTier(4, "LRU", 2);
        LocalDiskBackend disk = disk(dir, cpu, chunks);
        try (StorageManager storage = new StorageManager(cpu, List.of(disk))) {
            for (int i = 0; i < chunks; i++) {
                put(storage, cpu, i, i + 1);
                while (disk.stats().writes() < i + 1) {
                    Thread.onSpinWait();
                }
                assertTrue(disk.contains(key(i), false), "chunk " + i + " counted as written but not found");
            }
        }
    }

    @Test
    void aCorruptFileIsAMissThatDeletesItNeverCorruptKv(@TempDir Path dir) throws Exception {
        LocalCpuBackend cpu = TestChunks.cpuTier(2, "LRU", 2);
        LocalDiskBackend disk = disk(dir, cpu, 8);
        try (StorageManager storage = new StorageManager(cpu, List.of(disk))) {
            put(storage, cpu, 0, 1);
            disk.awaitPuts();
            Path file = findChunkFile(dir);
            try (FileChannel ch = FileChannel.open(file, StandardOpenOption.WRITE)) {
                ch.write(java.nio.ByteBuffer.wrap(new byte[] {42}), Files.size(file) - 100); // flip payload bytes
            }
            cpu.remove(key(0));
            assertTrue(storage.get(key(0)).isEmpty(), "a checksum mismatch is a miss");
            assertEquals(1, disk.stats().corruptReads());
            assertFalse(Files.exists(file), "the corrupt file is deleted");
            assertEquals(0, cpu.allocator().stats().liveObjects(), "and no reference leaked");
        }
    }

    @Test
    void theDirectoryNeverExceedsItsCapacity(@TempDir Path dir) throws Exception {
        LocalCpuBackend cpu = TestChunks.cpuTier(2, "LRU", 2);
        LocalDiskBackend disk = disk(dir, cpu, 3);
        try (StorageManager storage = new StorageManager(cpu, List.of(disk))) {
            for (int i = 0; i < 6; i++) {
                put(storage, cpu, i, i + 1);
                disk.awaitPuts();
                assertTrue(directoryBytes(dir) <= 3 * FILE_BYTES, "directory over capacity after chunk " + i);
            }
            assertEquals(3, disk.stats().chunks());
            assertEquals(3, disk.stats().evictions());
            assertFalse(disk.contains(key(0), false), "LRU evicted the oldest");
            assertTrue(disk.contains(key(5), false));
        }
    }

    @Test
    void aDiskThatFailsUnderneathCostsCountedMissesNeverAnExceptionOrALeak(@TempDir Path dir) throws Exception {
        LocalCpuBackend cpu = TestChunks.cpuTier(4, "LRU", 2);
        LocalDiskBackend disk = disk(dir, cpu, 8);
        try (StorageManager storage = new StorageManager(cpu, List.of(disk))) {
            try (var files = Files.list(dir)) {
                for (Path p : files.toList()) {
                    Files.delete(p);
                }
            }
            Files.delete(dir); // the directory vanishes under the running tier
            put(storage, cpu, 0, 1);
            disk.awaitPuts();
            assertEquals(1, disk.stats().ioFailures(), "the failed write is counted");
            assertTrue(storage.contains(key(0), false).isPresent(), "the CPU tier still has the chunk");
            assertEquals(cpu.size(), cpu.allocator().stats().liveObjects(), "the write job's reference was released");
        }
    }

    @Test
    void aFullPutQueueDropsStoresFromTheDiskTierWithoutWaiting(@TempDir Path dir) throws Exception {
        LocalCpuBackend cpu = TestChunks.cpuTier(24, "LRU", 2);
        LocalDiskBackend disk = new LocalDiskBackend(new ChunkFiles(dir, false, true), cpu, 64 * FILE_BYTES, "LRU", 1, 1);
        try (StorageManager storage = new StorageManager(cpu, List.of(disk))) {
            put(storage, cpu, 0, 20); // one call: the queue holds one put while the thread writes another
            disk.awaitPuts();
            var stats = disk.stats();
            assertTrue(stats.droppedPuts() > 0, "a put queue of 1 cannot take 20 stores at once: " + stats);
            assertEquals(20, stats.droppedPuts() + stats.writes(), "every store was written or counted as dropped");
            assertEquals(cpu.size(), cpu.allocator().stats().liveObjects(), "dropped stores hold no reference");
        }
    }

    /**
     * The tier's own files swapped, after it indexed them, for files that differ only in their magic
     * (as another program sharing the directory might leave them), and one planted before its key's
     * write: none is the tier's any more, so the write refuses to replace it, and evicting, removing
     * or clearing the indexed key deletes nothing. (LocalDiskBackendIntegrityTest covers a file that
     * was foreign from the start.)
     */
    @Test
    void chunkFilesSwappedForOnesWithAnotherMagicSurviveWriteEvictRemoveAndClear(@TempDir Path dir) throws Exception {
        LocalCpuBackend cpu = TestChunks.cpuTier(8, "LRU", 2);
        LocalDiskBackend disk = disk(dir, cpu, 3);
        ChunkFiles names = new ChunkFiles(dir, false, false);
        List<Path> planted = new ArrayList<>();
        try (StorageManager storage = new StorageManager(cpu, List.of(disk))) {
            for (int i = 1; i < 4; i++) { // one at a time: the LRU order is the order written
                put(storage, cpu, i, i + 1);
                disk.awaitPuts();
            }
            byte[] real = Files.readAllBytes(names.pathFor(key(1)));
            for (int i = 0; i <= 3; i++) { // keys 1..3 written by the cache, then replaced; key 0 planted before its write
                Path p = names.pathFor(key(i));
                byte[] forged = Files.exists(p) ? Files.readAllBytes(p) : real.clone();
                forged[0] ^= 0x5a;
                Files.write(p, forged);
                planted.add(p);
            }
            List<byte[]> before = new ArrayList<>();
            for (Path p : planted) {
                before.add(Files.readAllBytes(p));
            }

            put(storage, cpu, 0, 1); // write
            disk.awaitPuts();
            assertEquals(1, disk.stats().ioFailures(), "the write over a foreign file is refused and counted");
            put(storage, cpu, 4, 5); // evicts key 1, the least recently used
            disk.awaitPuts();
            assertFalse(disk.contains(key(1), false), "key 1 evicted");
            assertTrue(disk.remove(key(2)));
            disk.clear(); // key 3, and key 4's real file
            disk.close(); // drains the queued deletes

            for (int i = 0; i < planted.size(); i++) {
                assertTrue(java.util.Arrays.equals(before.get(i), Files.readAllBytes(planted.get(i))),
                        planted.get(i) + " was changed or deleted");
            }
            assertFalse(Files.exists(names.pathFor(key(4))), "the cache's own file was deleted by clear");
        }
    }

    private static Path findChunkFile(Path dir) throws IOException {
        try (var files = Files.list(dir)) {
            return files.filter(p -> p.getFileName().toString().endsWith(ChunkFileNames.SUFFIX)).findFirst().orElseThrow();
        }
    }

    private static long directoryBytes(Path dir) throws IOException {
        try (var files = Files.list(dir)) {
            // the marker that claims the directory is not cache data
            return files.filter(p -> Files.isRegularFile(p) && !p.getFileName().toString().equals(ChunkDirectoryMarker.NAME))
                    .mapToLong(p -> {
                try {
                    return Files.size(p);
                } catch (IOException e) {
                    return 0;
                }
            }).sum();
        }
    }
}
