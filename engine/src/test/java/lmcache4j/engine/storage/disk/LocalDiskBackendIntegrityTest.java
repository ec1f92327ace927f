package lmcache4j.engine.storage.disk;

import static lmcache4j.engine.storage.TestChunks.chunk;
import static lmcache4j.engine.storage.TestChunks.key;
import static lmcache4j.engine.storage.TestChunks.keys;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import lmcache4j.allocator.MemoryObj;
import lmcache4j.engine.storage.AllocationMode;
import lmcache4j.engine.storage.StorageManager;
import lmcache4j.engine.storage.TestChunks;
import lmcache4j.engine.storage.cpu.LocalCpuBackend;

/**
 * The tier over chunk files edited on disk between or during runs: a corrupt payload is never
 * promised, a forged header is a counted miss and never an exception, and what the tier did not
 * write survives recovery, eviction and {@code clear}.
 */
class LocalDiskBackendIntegrityTest {
    private static final long FILE_BYTES = 4096 + TestChunks.CHUNK_BYTES;

    @TempDir
    Path dir;
    @TempDir
    Path outside;

    private LocalDiskBackend open(LocalCpuBackend cpu, int chunks) throws IOException {
        return new LocalDiskBackend(new ChunkFiles(dir, false, false), cpu, chunks * FILE_BYTES, "LRU", 2, 16);
    }

    /** The tier that starts at once and offers recovered chunks as their payloads pass the check. */
    private LocalDiskBackend openCheckingInBackground(LocalCpuBackend cpu, int chunks) throws IOException {
        return new LocalDiskBackend(new ChunkFiles(dir, false, false), cpu, chunks * FILE_BYTES, "LRU", 2, 16, true);
    }

    private static Path pathOf(int i, Path dir) {
        return dir.resolve(ChunkFileNames.fileName(key(i).toKeyString()));
    }

    /** Stores chunks {@code [0, n)} one at a time through a CPU tier that holds two, so all reach the disk. */
    private void writeChunks(int n) throws Exception {
        LocalCpuBackend cpu = TestChunks.cpuTier(2, "LRU", 2);
        LocalDiskBackend disk = open(cpu, 16);
        try (StorageManager storage = new StorageManager(cpu, List.of(disk))) {
            for (int i = 0; i < n; i++) {
                storage.batchedPut(keys(i, i + 1), List.of(chunk(cpu, i, AllocationMode.EVICT).orElseThrow()), Optional.empty());
                disk.awaitPuts();
            }
            assertEquals(n, disk.stats().chunks());
        }
    }

    @ParameterizedTest(name = "checked in the background: {0}")
    @ValueSource(booleans = {false, true})
    void aPayloadCorruptedWhileDownIsNeverPromisedAfterARestart(boolean background) throws Exception {
        writeChunks(4);
        Path bad = pathOf(2, dir);
        ChunkFileEdits.flipPayloadByte(bad, TestChunks.CHUNK_BYTES / 2);

        LocalCpuBackend cpu = TestChunks.cpuTier(2, "LRU", 2);
        try (LocalDiskBackend disk = background ? openCheckingInBackground(cpu, 16) : open(cpu, 16)) {
            if (!background) {
                assertTrue(disk.verification().done(), "the constructor waited for the check");
            }
            assertFalse(disk.contains(key(2), false), "not promised, verified or not");
            assertTrue(disk.getBlocking(key(2)).isEmpty());
            disk.awaitVerification();
            assertFalse(disk.contains(key(2), false));
            for (int i : new int[] {0, 1, 3}) {
                assertTrue(disk.contains(key(i), false), "the sound chunks are offered once checked");
            }
            var stats = disk.stats();
            assertEquals(1, stats.corruptOnVerify());
            assertEquals(0, stats.unverifiedChunks());
            assertEquals(3, stats.chunks());
            assertEquals(3 * FILE_BYTES, stats.usedBytes(), "the removed file no longer counts");
            assertEquals(0, stats.corruptReads(), "it was never read for a request");
            VerificationProgress v = disk.verification();
            assertTrue(v.done() && v.chunks() == 4 && v.checked() == 4 && v.corrupt() == 1, v.toString());
            assertFalse(Files.exists(bad), "it carries the cache's magic: removed");
        }
    }

    @Test
    void recoveredChunksNotYetCheckedCanBeRemovedAndClearedAndAreNeverOfferedAfterwards() throws Exception {
        writeChunks(6);
        LocalCpuBackend cpu = TestChunks.cpuTier(2, "LRU", 2);
        try (LocalDiskBackend disk = openCheckingInBackground(cpu, 16)) {
            // whether the check has reached them or not, removal wins
            assertTrue(disk.remove(key(5)) || !Files.exists(pathOf(5, dir)));
            disk.clear();
            disk.awaitVerification();
            for (int i = 0; i < 6; i++) {
                assertFalse(disk.contains(key(i), false), "chunk " + i);
            }
            assertEquals(0, disk.stats().usedBytes());
            assertEquals(0, disk.stats().unverifiedChunks());
        }
        assertEquals(List.of(), ChunkFileEdits.chunkFiles(dir));
    }

    @Test
    void aForgedHeaderFoundAtStartIsRemovedAndNeverReadIntoTooSmallAnObject() throws Exception {
        writeChunks(2);
        Path forged = pathOf(1, dir);
        // the tokens halved, payload length and header CRC still consistent with each other
        ChunkFileEdits.forgeShape(forged, TestChunks.CHUNK.withDim(2, 128));

        LocalCpuBackend cpu = TestChunks.cpuTier(2, "LRU", 2);
        try (LocalDiskBackend disk = open(cpu, 16)) {
            assertEquals(1, disk.recovery().removedCorrupt());
            assertTrue(disk.getBlocking(key(1)).isEmpty(), "a miss, not an exception");
            assertTrue(disk.prefetch(key(1)).get(10, TimeUnit.SECONDS).isEmpty());
            assertFalse(Files.exists(forged));
            MemoryObj good = disk.getBlocking(key(0)).orElseThrow();
            assertEquals(0, TestChunks.marker(good));
            good.release();
            assertEquals(0, cpu.allocator().stats().liveObjects(), "nothing leaked");
        }
    }

    @Test
    void aFileForgedWhileServingIsACountedMissThatRemovesIt() throws Exception {
        LocalCpuBackend cpu = TestChunks.cpuTier(2, "LRU", 2);
        try (LocalDiskBackend disk = open(cpu, 16)) {
            List<MemoryObj> objs = new ArrayList<>();
            for (int i = 0; i < 2; i++) {
                objs.add(chunk(cpu, i, AllocationMode.EVICT).orElseThrow());
            }
            disk.batchedSubmitPut(keys(0, 2), objs);
            disk.awaitPuts();
            objs.forEach(MemoryObj::release);
            ChunkFileEdits.forgeShape(pathOf(0, dir), TestChunks.CHUNK.withDim(2, 128));
            ChunkFileEdits.forgeShape(pathOf(1, dir), TestChunks.CHUNK.withDim(2, 512));

            assertTrue(disk.getBlocking(key(0)).isEmpty());
            assertTrue(disk.prefetch(key(1)).get(10, TimeUnit.SECONDS).isEmpty(), "completes with a miss, not exceptionally");
            assertEquals(2, disk.stats().corruptReads());
            assertFalse(Files.exists(pathOf(0, dir)));
            assertFalse(Files.exists(pathOf(1, dir)));
            assertFalse(disk.contains(key(0), false));
            assertEquals(0, cpu.allocator().stats().liveObjects());
        }
    }

    @Test
    void aChunkFileSwappedForASymlinkIsNeitherReadThroughNorDeleted() throws Exception {
        byte[] original;
        LocalCpuBackend cpu = TestChunks.cpuTier(2, "LRU", 2);
        try (LocalDiskBackend disk = open(cpu, 16)) {
            MemoryObj obj = chunk(cpu, 4, AllocationMode.EVICT).orElseThrow();
            disk.batchedSubmitPut(keys(4, 5), List.of(obj));
            disk.awaitPuts();
            obj.release();
            // a valid chunk file of the same key outside, and the tier's file replaced by a link to it
            Path elsewhere = outside.resolve(pathOf(4, dir).getFileName());
            Files.move(pathOf(4, dir), elsewhere);
            original = Files.readAllBytes(elsewhere);
            Files.createSymbolicLink(pathOf(4, dir), elsewhere);

            assertTrue(disk.getBlocking(key(4)).isEmpty(), "the link is not read through");
            assertEquals(1, disk.stats().ioFailures());
            disk.remove(key(4));
            disk.clear();
        }
        assertTrue(Files.isSymbolicLink(pathOf(4, dir)), "nor deleted");
        assertArrayEquals(original, Files.readAllBytes(outside.resolve(pathOf(4, dir).getFileName())), "its target untouched");
    }

    @Test
    void aTruncatedFileIsNotServedAfterARestart() throws Exception {
        writeChunks(2);
        ChunkFileEdits.truncate(pathOf(0, dir), 4096 + 100);
        LocalCpuBackend cpu = TestChunks.cpuTier(2, "LRU", 2);
        try (LocalDiskBackend disk = open(cpu, 16)) {
            assertFalse(disk.contains(key(0), false));
            assertEquals(1, disk.recovery().removedCorrupt());
            assertFalse(Files.exists(pathOf(0, dir)));
        }
    }

    @Test
    void foreignFilesSurviveRecoveryEvictionAndClear() throws Exception {
        writeChunks(1); // the directory is the tier's now
        Path precious = Files.writeString(outside.resolve("precious.txt"), "outside");
        List<Path> foreign = List.of(Files.writeString(dir.resolve("thesis.txt"), "four years of work"),
                Files.write(dir.resolve("imposter.lmc"), new byte[(int) FILE_BYTES]),
                Files.createSymbolicLink(dir.resolve("outside.lmc"), precious),
                Files.createSymbolicLink(pathOf(9, dir), precious));

        LocalCpuBackend cpu = TestChunks.cpuTier(2, "LRU", 2);
        try (LocalDiskBackend disk = open(cpu, 3); StorageManager storage = new StorageManager(cpu, List.of(disk))) {
            assertEquals(foreign.size(), disk.recovery().foreign());
            for (int i = 1; i < 10; i++) { // 9 more chunks through a 3-chunk tier: evictions; key 9's name is a link
                storage.batchedPut(keys(i, i + 1), List.of(chunk(cpu, i, AllocationMode.EVICT).orElseThrow()), Optional.empty());
                disk.awaitPuts();
            }
            assertTrue(disk.stats().evictions() > 0);
            assertFalse(disk.contains(key(9), false), "the chunk whose name a link holds is not cached");
            storage.clear();
            disk.remove(key(9));
        }
        for (Path p : foreign) {
            assertTrue(Files.exists(p, LinkOption.NOFOLLOW_LINKS), p + " was deleted");
        }
        assertEquals("four years of work", Files.readString(dir.resolve("thesis.txt")));
        assertArrayEquals(new byte[(int) FILE_BYTES], Files.readAllBytes(dir.resolve("imposter.lmc")));
        assertEquals("outside", Files.readString(precious));
    }
    /**
     * A regular file with another magic at the exact name a key's chunk file would have is not the
     * tier's: writing that key, evicting, clearing and removing it leave the file as it was.
     */
    @Test
    void aForeignFileAtAKeysExactNameSurvivesWriteEvictClearAndRemove() throws Exception {
        writeChunks(1); // the directory is the tier's now
        byte[] notOurs = new byte[(int) FILE_BYTES];
        for (int b = 0; b < notOurs.length; b++) {
            notOurs[b] = (byte) (b * 31 + 7);
        }
        Path squatted = Files.write(pathOf(5, dir), notOurs);

        LocalCpuBackend cpu = TestChunks.cpuTier(2, "LRU", 2);
        try (LocalDiskBackend disk = open(cpu, 3); StorageManager storage = new StorageManager(cpu, List.of(disk))) {
            assertEquals(1, disk.recovery().foreign());
            for (int i = 1; i < 10; i++) { // key 5's name is taken; 9 chunks through a 3-chunk tier evict
                storage.batchedPut(keys(i, i + 1), List.of(chunk(cpu, i, AllocationMode.EVICT).orElseThrow()), Optional.empty());
                disk.awaitPuts();
            }
            assertTrue(disk.stats().evictions() > 0);
            assertFalse(disk.contains(key(5), false), "the chunk whose name a foreign file holds is not cached");
            assertTrue(disk.getBlocking(key(5)).isEmpty(), "the foreign file is never read as a chunk");
            storage.clear();
            disk.remove(key(5));
        }
        assertTrue(Files.isRegularFile(squatted, LinkOption.NOFOLLOW_LINKS), squatted + " was deleted");
        assertArrayEquals(notOurs, Files.readAllBytes(squatted), squatted + " was changed");
    }
}
