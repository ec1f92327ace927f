package lmcache4j.engine.storage.disk;

import static lmcache4j.engine.storage.TestChunks.chunk;
import static lmcache4j.engine.storage.TestChunks.key;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.channels.FileChannel;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

import lmcache4j.allocator.MemoryObj;
import lmcache4j.engine.storage.AllocationMode;
import lmcache4j.engine.storage.TestChunks;
import lmcache4j.engine.storage.cpu.LocalCpuBackend;

/** What the disk tier's fault and lifecycle tests share: a put that waits for its write, waits that fail in time, a stalled write. */
final class DiskTierFixtures {
    /** One 64 KiB chunk's file: the 4 KiB header and the payload, already whole blocks. */
    static final long FILE_BYTES = 4096 + TestChunks.CHUNK_BYTES;
    static final long WAIT_SECONDS = 20;

    private DiskTierFixtures() {
    }

    /** Puts test chunk {@code i} from {@code cpu} into {@code disk} and waits for its write. */
    static void put(LocalDiskBackend disk, LocalCpuBackend cpu, int i) throws InterruptedException {
        MemoryObj obj = chunk(cpu, i, AllocationMode.EVICT).orElseThrow();
        disk.batchedSubmitPut(List.of(key(i)), List.of(obj));
        obj.release();
        disk.awaitPuts();
    }

    /** Waits for {@code condition}, which another thread makes true; fails after {@link #WAIT_SECONDS}. */
    static void await(BooleanSupplier condition, String what) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(WAIT_SECONDS);
        while (!condition.getAsBoolean()) {
            assertTrue(System.nanoTime() < deadline, "timed out waiting for " + what);
            LockSupport.parkNanos(100_000);
        }
    }

    static void await(CountDownLatch latch, String what) throws InterruptedException {
        assertTrue(latch.await(WAIT_SECONDS, TimeUnit.SECONDS), "timed out waiting for " + what);
    }

    /**
     * A temp-file opener whose {@code nth} opening (counted in {@code openings}) counts {@code reached}
     * down and then waits for {@code release}: that write stops with its bytes reserved.
     */
    static ChunkFiles.TempFileOpener stallingAt(int nth, AtomicInteger openings, CountDownLatch reached,
                                                CountDownLatch release) {
        return (temp, options) -> {
            if (openings.incrementAndGet() == nth) {
                reached.countDown();
                try {
                    release.await(WAIT_SECONDS, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            return FileChannel.open(temp, options);
        };
    }
}
