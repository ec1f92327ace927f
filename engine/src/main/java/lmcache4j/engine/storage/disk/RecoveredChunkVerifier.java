package lmcache4j.engine.storage.disk;

import java.io.IOException;
import java.lang.System.Logger.Level;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import lmcache4j.allocator.internal.threads.OwnedThreads;

/**
 * Checks the payload of every chunk file found at start, on its own thread, before the tier offers
 * it: a file corrupted while the cache was down is removed instead of promised by a lookup and then
 * missed by the retrieve. The start itself only reads headers, so a large directory opens at once
 * and its chunks become hits as they are verified.
 */
final class RecoveredChunkVerifier implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(RecoveredChunkVerifier.class.getName());
    /** Bytes read per transfer: large enough for full disk bandwidth, small enough to stay off the heap's way. */
    static final int BUFFER_BYTES = 1 << 20;

    /** What the tier does with each result. */
    interface Listener {
        /** Whether {@code chunk} still waits for its check (not removed or cleared since the start). */
        boolean wanted(RecoveredChunk chunk);

        /** {@code chunk}'s payload is sound: offer it. */
        void verified(RecoveredChunk chunk);

        /** {@code chunk} failed its check ({@code corrupt}) or could not be read: drop it. */
        void rejected(RecoveredChunk chunk, Exception why, boolean corrupt);
    }

    private final ChunkFiles files;
    private final List<RecoveredChunk> chunks;
    private final Listener listener;
    private final CountDownLatch finished = new CountDownLatch(1);
    private final AtomicInteger checked = new AtomicInteger();
    private final AtomicInteger corrupt = new AtomicInteger();
    private final AtomicInteger failed = new AtomicInteger();
    private final AtomicLong bytes = new AtomicLong();
    private final long startedNanos = System.nanoTime();
    private volatile long doneNanos = -1;
    private volatile boolean stopping;
    private final OwnedThreads threads = new OwnedThreads();

    /** Starts checking {@code chunks} in order on a daemon thread; results go to {@code listener}. */
    RecoveredChunkVerifier(ChunkFiles files, List<RecoveredChunk> chunks, Listener listener) {
        this.files = Objects.requireNonNull(files, "files");
        this.chunks = List.copyOf(chunks);
        this.listener = Objects.requireNonNull(listener, "listener");
        if (this.chunks.isEmpty()) {
            finish(false);
        } else {
            threads.start("disk-verify", this::run);
        }
    }

    private void run() {
        boolean stoppedEarly = false;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buffer = arena.allocate(BUFFER_BYTES, ChunkFileHeader.ALIGNMENT);
            for (RecoveredChunk chunk : chunks) {
                if (stopping) {
                    stoppedEarly = true;
                    break;
                }
                if (listener.wanted(chunk)) {
                    check(chunk, buffer);
                }
            }
        } catch (RuntimeException | Error e) {
            stoppedEarly = true;
            LOG.log(Level.ERROR, "the check of recovered chunk files stopped: " + e, e);
        } finally {
            finish(stoppedEarly);
        }
    }

    private void check(RecoveredChunk chunk, MemorySegment buffer) {
        try {
            files.verify(chunk.path(), chunk.header(), buffer);
            bytes.addAndGet(chunk.fileBytes());
            checked.incrementAndGet();
            listener.verified(chunk);
        } catch (CorruptChunkException e) {
            bytes.addAndGet(chunk.fileBytes()); // read through, or nearly
            corrupt.incrementAndGet();
            checked.incrementAndGet();
            listener.rejected(chunk, e, true);
        } catch (IOException e) {
            failed.incrementAndGet();
            checked.incrementAndGet();
            listener.rejected(chunk, e, false);
        }
    }

    private void finish(boolean stoppedEarly) {
        doneNanos = System.nanoTime();
        VerificationProgress p = progress();
        if (p.chunks() > 0) {
            LOG.log(Level.INFO, () -> String.format("checked %d of %d recovered chunk files (%,d bytes) in %.1f ms, %.2f GB/s "
                    + "(%s I/O): %d corrupt and %d unreadable removed%s", p.checked(), p.chunks(), p.bytes(), p.nanos() / 1e6,
                    p.gbPerSecond(), files.directIo() ? "O_DIRECT" : "buffered", p.corrupt(), p.failed(),
                    stoppedEarly ? "; stopped before the end" : ""));
        }
        finished.countDown();
    }

    /** How far the check is. */
    VerificationProgress progress() {
        long end = doneNanos;
        boolean done = end >= 0;
        return new VerificationProgress(chunks.size(), checked.get(), corrupt.get(), failed.get(), bytes.get(),
                (done ? end : System.nanoTime()) - startedNanos, done);
    }

    /** Waits until every chunk has been checked (or the check was stopped); false on timeout. */
    boolean await(long timeout, TimeUnit unit) throws InterruptedException {
        return finished.await(timeout, unit);
    }

    /** Stops after the chunk in hand and waits for the thread; chunks not yet checked are never offered. */
    @Override
    public void close() {
        stopping = true;
        threads.join(Duration.ofSeconds(30));
    }
}
