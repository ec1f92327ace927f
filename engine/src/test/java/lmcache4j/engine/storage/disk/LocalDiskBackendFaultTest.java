package lmcache4j.engine.storage.disk;

import static lmcache4j.engine.storage.TestChunks.chunk;
import static lmcache4j.engine.storage.TestChunks.key;
import static lmcache4j.engine.storage.disk.DiskTierFixtures.FILE_BYTES;
import static lmcache4j.engine.storage.disk.DiskTierFixtures.WAIT_SECONDS;
import static lmcache4j.engine.storage.disk.DiskTierFixtures.await;
import static lmcache4j.engine.storage.disk.DiskTierFixtures.put;
import static lmcache4j.engine.storage.disk.DiskTierFixtures.stallingAt;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import lmcache4j.allocator.MemoryObj;
import lmcache4j.allocator.TensorShape;
import lmcache4j.engine.storage.AllocationMode;
import lmcache4j.engine.storage.MemoryProvider;
import lmcache4j.engine.storage.TestChunks;
import lmcache4j.engine.storage.cpu.LocalCpuBackend;

/**
 * The tier when its files fail under it: a read that meets an I/O error or a caller's mistake, a
 * read that an eviction reaches while the file is being read, and puts in flight together against
 * a nearly full directory. Each meeting is made with latches in the memory provider or the temp
 * file's opener, never with sleeps.
 */
class LocalDiskBackendFaultTest {
    /** Tokens in one test chunk ([2, 2, 256, 32] in KV_2LTD). */
    private static final long CHUNK_TOKENS = 256;

    @TempDir
    Path dir;

    private LocalDiskBackend disk(MemoryProvider memory, long capacityBytes) throws IOException {
        return new LocalDiskBackend(new ChunkFiles(dir, false, false), memory, capacityBytes, "LRU", 1, 16);
    }

    @Test
    void itIsNamedAsLmcachesBackend() throws Exception {
        try (LocalCpuBackend cpu = TestChunks.cpuTier(1, "LRU", 1);
             LocalDiskBackend disk = disk(cpu, FILE_BYTES)) {
            assertEquals("LocalDiskBackend", disk.name());
            assertEquals(LocalDiskBackend.NAME, disk.name());
        }
    }

    @Test
    void aFileBeingReadIsNotEvictedUnderTheRead() throws Exception {
        CountDownLatch allocating = new CountDownLatch(1);
        CountDownLatch proceed = new CountDownLatch(1);
        try (LocalCpuBackend cpu = TestChunks.cpuTier(3, "LRU", 1)) {
            // The read has pinned the file and asks for memory: it waits there until the test lets it go on.
            MemoryProvider stalling = (shape, dtype, format, mode) -> {
                allocating.countDown();
                try {
                    proceed.await(WAIT_SECONDS, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                return cpu.allocate(shape, dtype, format, mode);
            };
            try (LocalDiskBackend disk = disk(stalling, FILE_BYTES)) {
                put(disk, cpu, 0);
                CompletableFuture<Optional<MemoryObj>> read = CompletableFuture.supplyAsync(() -> disk.getBlocking(key(0)));
                await(allocating, "the read to pin the file and ask for memory");

                put(disk, cpu, 1); // the directory holds one file, and it is being read: nothing can make room
                assertEquals(0, disk.stats().evictions(), "the file being read was evicted");
                assertEquals(1, disk.stats().rejectedPuts());
                assertTrue(Files.exists(fileOfChunk0()), "the file being read is still on disk");

                proceed.countDown();
                MemoryObj obj = read.get(WAIT_SECONDS, TimeUnit.SECONDS).orElseThrow(() -> new AssertionError(
                        "the read missed: " + disk.stats()));
                assertEquals(0, TestChunks.marker(obj));
                obj.release();
                assertEquals(1, disk.stats().reads());
                assertEquals(0, disk.stats().ioFailures());

                put(disk, cpu, 2); // read done, the pin is gone: now the file can make room
                assertEquals(1, disk.stats().evictions());
                assertTrue(disk.contains(key(2), false) && !disk.contains(key(0), false));
            }
        }
    }

    private Path fileOfChunk0() {
        return dir.resolve(ChunkFileNames.fileName(key(0).toKeyString()));
    }

    @Test
    void theObjectsReadsReturnAreTheCallersUntilReleased() throws Exception {
        try (LocalCpuBackend cpu = TestChunks.cpuTier(4, "LRU", 1);
             CapturedLog ioLog = CapturedLog.of(IoExecutor.class);
             LocalDiskBackend disk = disk(cpu, 4 * FILE_BYTES)) {
            put(disk, cpu, 0);
            put(disk, cpu, 1);
            MemoryObj first = disk.getBlocking(key(0)).orElseThrow();
            MemoryObj second = disk.getBlocking(key(1)).orElseThrow(); // would reuse the first's memory were it freed
            assertEquals(1, first.refCount());
            assertEquals(2, cpu.allocator().stats().liveObjects());
            assertEquals(0, TestChunks.marker(first));
            assertEquals(1, TestChunks.marker(second));
            first.release();
            second.release();
            assertEquals(0, cpu.allocator().stats().liveObjects());
            assertEquals(List.of(), ioLog.at(System.Logger.Level.ERROR), "no I/O job failed");
        }
    }

    @Test
    void aReadThatMeetsAnIoErrorIsACountedMissThatForgetsTheChunk() throws Exception {
        try (LocalCpuBackend cpu = TestChunks.cpuTier(2, "LRU", 1);
             LocalDiskBackend disk = disk(cpu, 4 * FILE_BYTES)) {
            put(disk, cpu, 0);
            put(disk, cpu, 1);
            Files.delete(fileOfChunk0()); // gone under the tier: opening it fails
            assertTrue(disk.getBlocking(key(0)).isEmpty());
            LocalDiskBackend.Stats stats = disk.stats();
            assertEquals(1, stats.ioFailures());
            assertEquals(0, stats.corruptReads(), "an I/O error is not a checksum mismatch");
            assertEquals(0, stats.reads());
            assertFalse(disk.contains(key(0), false), "a chunk that cannot be read is no longer offered");
            assertEquals(1, stats.chunks());
            assertEquals(FILE_BYTES, stats.usedBytes(), "its bytes were given back");
            assertEquals(cpu.size(), cpu.allocator().stats().liveObjects(), "the object allocated for it was freed");
            Optional<MemoryObj> other = disk.getBlocking(key(1));
            assertEquals(1, TestChunks.marker(other.orElseThrow()));
            other.get().release();
        }
    }

    @Test
    void aReadIntoTooSmallAnObjectIsACountedMissThatLeavesTheFile() throws Exception {
        try (LocalCpuBackend cpu = TestChunks.cpuTier(2, "LRU", 1)) {
            // A provider that hands back half the memory asked for: a caller's mistake, not a bad file.
            TensorShape half = TensorShape.of(2, 2, 128, 32);
            MemoryProvider short_ = (shape, dtype, format, mode) -> cpu.allocate(half, dtype, format, mode);
            try (LocalDiskBackend disk = disk(short_, 4 * FILE_BYTES);
                 CapturedLog log = CapturedLog.of(LocalDiskBackend.class)) {
                put(disk, cpu, 0);
                assertTrue(disk.getBlocking(key(0)).isEmpty());
                assertTrue(log.at(System.Logger.Level.WARNING).stream().anyMatch(w -> w.startsWith("disk tier read of "
                        + fileOfChunk0() + " failed, treated as a miss: java.lang.IllegalArgumentException")),
                        log.at(System.Logger.Level.WARNING).toString());
                LocalDiskBackend.Stats stats = disk.stats();
                assertEquals(1, stats.ioFailures());
                assertEquals(0, stats.corruptReads());
                assertFalse(disk.contains(key(0), false), "no longer offered by this process");
                assertEquals(0, stats.usedBytes());
                assertTrue(Files.exists(fileOfChunk0()), "not proven corrupt: the file stays for the next start");
                assertEquals(cpu.size(), cpu.allocator().stats().liveObjects(), "the short object was freed");
            }
        }
    }

    @Test
    void clearCountsTheTokensOfRecoveredChunksCheckedOrNot() throws Exception {
        try (LocalCpuBackend cpu = TestChunks.cpuTier(2, "LRU", 1)) {
            try (LocalDiskBackend disk = disk(cpu, 8 * FILE_BYTES)) {
                for (int i = 0; i < 5; i++) {
                    put(disk, cpu, i);
                }
            }
            // Checked in the background: each chunk is still unverified or already offered when clear looks.
            try (LocalDiskBackend disk = new LocalDiskBackend(new ChunkFiles(dir, false, false), cpu, 8 * FILE_BYTES, "LRU",
                    1, 16, true)) {
                assertEquals(5 * CHUNK_TOKENS, disk.clear());
                disk.awaitVerification();
                assertEquals(0, disk.stats().chunks());
                assertEquals(0, disk.stats().usedBytes());
                assertEquals(0, disk.clear(), "nothing is left to clear");
                put(disk, cpu, 5); // the I/O thread takes the tier's lock: clear let go of it
                assertTrue(disk.contains(key(5), false));
            }
        }
    }

    @Test
    void putsInFlightTogetherNeverOverrunANearlyFullDirectory() throws Exception {
        CountDownLatch firstOpening = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        AtomicInteger openings = new AtomicInteger();
        AtomicLong temps = new AtomicLong();
        // The first write stops once its bytes are reserved, as it creates its temp file, until the second put is decided.
        ChunkFiles.TempFileOpener stallFirst = stallingAt(1, openings, firstOpening, release);
        ChunkFiles files = new ChunkFiles(dir, false, false, false,
                target -> target.resolveSibling(target.getFileName() + ".tmp-1-" + temps.incrementAndGet()), stallFirst);
        long capacity = 2 * FILE_BYTES - 1; // one file fits, two do not
        try (LocalCpuBackend cpu = TestChunks.cpuTier(2, "LRU", 1);
             LocalDiskBackend disk = new LocalDiskBackend(files, cpu, capacity, "LRU", 2, 16)) {
            MemoryObj a = chunk(cpu, 0, AllocationMode.EVICT).orElseThrow();
            MemoryObj b = chunk(cpu, 1, AllocationMode.EVICT).orElseThrow();
            disk.batchedSubmitPut(List.of(key(0), key(1)), List.of(a, b));
            a.release();
            b.release();
            await(firstOpening, "the first write to reserve its bytes");
            await(() -> disk.stats().rejectedPuts() == 1 || openings.get() == 2, "the second put to be decided");
            release.countDown();
            disk.awaitPuts();

            LocalDiskBackend.Stats stats = disk.stats();
            assertTrue(stats.usedBytes() <= capacity, stats.usedBytes() + " bytes of files in a " + capacity
                    + "-byte directory");
            assertEquals(1, stats.rejectedPuts(), "the second file did not fit beside the first one's reservation");
            assertEquals(1, stats.writes());
            assertEquals(FILE_BYTES, stats.usedBytes());
            assertEquals(1, ChunkFileEdits.chunkFiles(dir).size());
        }
    }

    @Test
    void aWriteThatFailsIsACountedSkipThatGivesItsRoomBack() throws Exception {
        AtomicInteger opens = new AtomicInteger();
        ChunkFiles failingFirst = new ChunkFiles(dir, false, false, false,
                target -> target.resolveSibling(target.getFileName() + ".tmp-1-" + opens.get()), (temp, options) -> {
                    if (opens.incrementAndGet() == 1) {
                        throw new IOException("simulated: no space left on device");
                    }
                    return FileChannel.open(temp, options);
                });
        try (LocalCpuBackend cpu = TestChunks.cpuTier(2, "LRU", 1);
             CapturedLog log = CapturedLog.of(LocalDiskBackend.class);
             LocalDiskBackend disk = new LocalDiskBackend(failingFirst, cpu, FILE_BYTES, "LRU", 1, 16)) {
            put(disk, cpu, 0);
            LocalDiskBackend.Stats stats = disk.stats();
            assertEquals(1, stats.ioFailures());
            assertEquals(0, stats.writes());
            assertEquals(0, stats.usedBytes());
            assertFalse(disk.contains(key(0), false));
            List<String> warnings = log.at(System.Logger.Level.WARNING);
            assertEquals(1, warnings.size(), warnings.toString());
            assertTrue(warnings.get(0).startsWith("disk tier skipped a chunk: cannot write chunk file ")
                    && warnings.get(0).endsWith("simulated: no space left on device"), warnings.get(0));
            put(disk, cpu, 1); // the failed write's reservation was given back: the one file's room is free
            assertTrue(disk.contains(key(1), false));
            assertEquals(0, disk.stats().rejectedPuts());
        }
    }

    @Test
    void aPutMakesRoomBesideAnotherInFlightByEvictingWhatIsOnDisk() throws Exception {
        CountDownLatch secondOpening = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        AtomicInteger openings = new AtomicInteger();
        AtomicLong temps = new AtomicLong();
        // The second write (chunk 1) stops with its bytes reserved, while chunk 2's put must make room.
        ChunkFiles.TempFileOpener stallSecond = stallingAt(2, openings, secondOpening, release);
        ChunkFiles files = new ChunkFiles(dir, false, false, false,
                target -> target.resolveSibling(target.getFileName() + ".tmp-1-" + temps.incrementAndGet()), stallSecond);
        try (LocalCpuBackend cpu = TestChunks.cpuTier(3, "LRU", 1);
             LocalDiskBackend disk = new LocalDiskBackend(files, cpu, 2 * FILE_BYTES, "LRU", 2, 16)) {
            put(disk, cpu, 0);
            MemoryObj b = chunk(cpu, 1, AllocationMode.EVICT).orElseThrow();
            disk.batchedSubmitPut(List.of(key(1)), List.of(b));
            b.release();
            await(secondOpening, "chunk 1's write to reserve its bytes");
            MemoryObj c = chunk(cpu, 2, AllocationMode.EVICT).orElseThrow();
            disk.batchedSubmitPut(List.of(key(2)), List.of(c));
            c.release();
            await(() -> disk.stats().writes() == 2 || disk.stats().rejectedPuts() == 1, "chunk 2's put to be decided");
            release.countDown();
            disk.awaitPuts();

            LocalDiskBackend.Stats stats = disk.stats();
            assertEquals(0, stats.rejectedPuts(), "chunk 0 on disk could make room: " + stats);
            assertEquals(1, stats.evictions());
            assertEquals(3, stats.writes());
            assertEquals(2 * FILE_BYTES, stats.usedBytes());
            assertFalse(disk.contains(key(0), false));
            assertTrue(disk.contains(key(1), false) && disk.contains(key(2), false));
        }
    }
}
