package lmcache4j.engine.storage.disk;

import static lmcache4j.engine.storage.TestChunks.chunk;
import static lmcache4j.engine.storage.TestChunks.key;
import static lmcache4j.engine.storage.disk.DiskTierFixtures.FILE_BYTES;
import static lmcache4j.engine.storage.disk.DiskTierFixtures.WAIT_SECONDS;
import static lmcache4j.engine.storage.disk.DiskTierFixtures.put;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.System.Logger.Level;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import lmcache4j.engine.key.CacheKey;
import lmcache4j.engine.storage.MemoryProvider;
import lmcache4j.engine.storage.ResidencyListener;
import lmcache4j.engine.storage.TestChunks;
import lmcache4j.engine.storage.cpu.LocalCpuBackend;

/**
 * The tier's life around its reads and writes: the residency events and the recency a lookup
 * leaves, a memory provider that throws, a start on an interrupted thread, what close leaves
 * behind, a remove after close, and the lines an operator reads in the log.
 */
class LocalDiskBackendLifecycleTest {

    @TempDir
    Path dir;

    private LocalDiskBackend disk(MemoryProvider memory, long capacityBytes) throws IOException {
        return new LocalDiskBackend(new ChunkFiles(dir, false, false), memory, capacityBytes, "LRU", 1, 16);
    }

    private Path fileOf(int i) {
        return dir.resolve(ChunkFileNames.fileName(key(i).toKeyString()));
    }

    @Test
    void itTellsItsListenerWhatItAdmitsAndEvicts() throws Exception {
        List<String> events = new ArrayList<>();
        try (LocalCpuBackend cpu = TestChunks.cpuTier(2, "LRU", 1);
             LocalDiskBackend disk = disk(cpu, FILE_BYTES)) {
            disk.setResidencyListener(new ResidencyListener() {
                @Override
                public void admitted(String tier, CacheKey key) {
                    events.add("admitted " + tier + " " + key);
                }

                @Override
                public void evicted(String tier, CacheKey key) {
                    events.add("evicted " + tier + " " + key);
                }
            });
            put(disk, cpu, 0);
            put(disk, cpu, 1);
            assertEquals(List.of("admitted LocalDiskBackend " + key(0), "evicted LocalDiskBackend " + key(0),
                    "admitted LocalDiskBackend " + key(1)), events);
        }
    }

    @Test
    void aLookupsTouchMakesItsChunkTheMostRecent() throws Exception {
        try (LocalCpuBackend cpu = TestChunks.cpuTier(2, "LRU", 1);
             LocalDiskBackend disk = disk(cpu, 2 * FILE_BYTES)) {
            put(disk, cpu, 0);
            put(disk, cpu, 1);
            assertTrue(disk.contains(key(0), true));
            assertTrue(disk.unpin(key(0)));
            disk.touchCache(); // chunk 0 was looked up: chunk 1 is now the least recent
            put(disk, cpu, 2);
            assertTrue(disk.contains(key(0), false), "the chunk just looked up stays");
            assertFalse(disk.contains(key(1), false), "the least recent one was evicted");
        }
    }

    @Test
    void aProviderThatThrowsFailsTheRetrieveAndTheFileStaysEvictable() throws Exception {
        IllegalStateException fault = new IllegalStateException("no memory before the retrieve's deadline");
        try (LocalCpuBackend cpu = TestChunks.cpuTier(2, "LRU", 1);
             CapturedLog log = CapturedLog.of(LocalDiskBackend.class);
             LocalDiskBackend disk = disk((shape, dtype, format, mode) -> {
                 throw fault;
             }, FILE_BYTES)) {
            put(disk, cpu, 0);
            assertEquals(fault, assertThrows(IllegalStateException.class, () -> disk.getBlocking(key(0))),
                    "the provider's error is the retrieve's to report");
            assertEquals(Optional.empty(), disk.prefetch(key(0)).get(WAIT_SECONDS, TimeUnit.SECONDS),
                    "a prefetch turns it into a miss");
            assertTrue(log.at(Level.WARNING).stream().anyMatch(w -> w.startsWith("disk tier prefetch of " + key(0)
                    + " failed, treated as a miss: " + fault)), log.at(Level.WARNING).toString());
            assertTrue(disk.contains(key(0), false), "not the file's fault: still offered");
            put(disk, cpu, 1); // the failed reads let go of the file: it makes room
            assertEquals(1, disk.stats().evictions());
            assertEquals(0, disk.stats().rejectedPuts());
            assertFalse(Files.exists(fileOf(0)));
        }
    }

    @Test
    void aStartOnAnInterruptedThreadKeepsTheInterruptAndSaysSo() throws Exception {
        ChunkFiles files = new ChunkFiles(dir, false, false);
        try (LocalCpuBackend cpu = TestChunks.cpuTier(2, "LRU", 1);
             CapturedLog log = CapturedLog.of(LocalDiskBackend.class)) {
            Thread.currentThread().interrupt();
            LocalDiskBackend disk;
            try {
                disk = new LocalDiskBackend(files, cpu, FILE_BYTES, "LRU", 1, 16);
            } finally {
                assertTrue(Thread.interrupted(), "the interrupt is kept for the caller");
            }
            try (disk) {
                assertTrue(log.at(Level.WARNING).stream().anyMatch(w -> w.startsWith(
                        "LocalDiskBackend: interrupted while checking recovered chunk files")), log.at(Level.WARNING).toString());
                put(disk, cpu, 0);
                assertTrue(disk.contains(key(0), false), "the tier works");
            }
        }
    }

    @Test
    void closeStopsTheCheckReleasesTheTierAndARemoveAfterwardsDeletesAtOnce() throws Exception {
        try (LocalCpuBackend cpu = TestChunks.cpuTier(2, "LRU", 1)) {
            try (LocalDiskBackend disk = disk(cpu, 64 * FILE_BYTES)) {
                for (int i = 0; i < 40; i++) {
                    put(disk, cpu, i);
                }
            }
            LocalDiskBackend disk = new LocalDiskBackend(new ChunkFiles(dir, false, false), cpu, 64 * FILE_BYTES, "LRU", 1,
                    16, true);
            disk.close();
            assertTrue(disk.verification().done(), "the background check has stopped once close returns");
            // Another thread still gets the tier's answers: close let go of its lock.
            LocalDiskBackend.Stats stats = CompletableFuture.supplyAsync(disk::stats).get(WAIT_SECONDS, TimeUnit.SECONDS);
            assertEquals(40 * FILE_BYTES, stats.usedBytes());
            assertFalse(disk.remove(key(99)), "a key the tier never had");
            assertTrue(disk.remove(key(3)));
            assertFalse(Files.exists(fileOf(3)), "with the I/O threads stopped, the file is deleted at once");
            assertTrue(Files.exists(fileOf(4)));
            disk.close();
        }
    }

    @Test
    void theLogSaysWhatStartFoundAndWhyAReadOrWriteMissed() throws Exception {
        try (LocalCpuBackend cpu = TestChunks.cpuTier(2, "LRU", 1)) {
            try (LocalDiskBackend disk = disk(cpu, 4 * FILE_BYTES)) {
                put(disk, cpu, 0);
                put(disk, cpu, 1);
            }
            ChunkFileEdits.flipPayloadByte(fileOf(1), 10);
            try (CapturedLog log = CapturedLog.of(LocalDiskBackend.class);
                 LocalDiskBackend disk = disk(cpu, 4 * FILE_BYTES)) {
                List<String> info = log.at(Level.INFO);
                assertTrue(info.stream().anyMatch(i -> i.equals("LocalDiskBackend: 2 chunk file(s), " + 2 * FILE_BYTES
                        + " bytes recovered, offered as a background check verifies their payloads; removed 0 partial and 0 "
                        + "corrupt file(s); left 0 foreign entr(ies) alone; buffered I/O")), info.toString());
                List<String> warnings = log.at(Level.WARNING);
                assertEquals(1, warnings.size(), warnings.toString());
                assertTrue(warnings.get(0).startsWith("disk tier removed a chunk file that went bad while the cache was down"),
                        warnings.get(0));
                log.reset();

                ChunkFileEdits.flipPayloadByte(fileOf(0), 10);
                assertTrue(disk.getBlocking(key(0)).isEmpty());
                assertTrue(log.at(Level.WARNING).getLast().startsWith("disk tier dropped a corrupt chunk"),
                        log.at(Level.WARNING).toString());

                put(disk, cpu, 2);
                Files.delete(fileOf(2));
                assertTrue(disk.getBlocking(key(2)).isEmpty());
                assertTrue(log.at(Level.WARNING).getLast().startsWith("disk tier read failed, treated as a miss: "),
                        log.at(Level.WARNING).toString());
                assertEquals(2, log.at(Level.WARNING).size());
            }
        }
    }
}
