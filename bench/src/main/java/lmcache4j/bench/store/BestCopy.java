package lmcache4j.bench.store;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import lmcache4j.engine.connector.HostCopyRoutine;

/**
 * The machine's best copy of a run's bytes, the limit {@code store_vs_best_copy} and
 * {@code retrieve_vs_best_copy} divide by: contiguous memory to contiguous memory, cut into as many
 * contiguous parts as the engine has copy threads, each part copied by one thread (the caller and
 * helpers started once), with each routine this machine runs; the fastest routine is the limit.
 */
final class BestCopy implements AutoCloseable {
    /** Parts start at page boundaries, so every routine takes them whole (alignment, step). */
    private static final long PART_ALIGNMENT = 4096;

    private final int threads;
    private final ExecutorService helpers;
    private final List<HostCopyRoutine> routines;

    BestCopy(int threads) {
        this.threads = threads;
        this.helpers = threads > 1 ? Executors.newFixedThreadPool(threads - 1, Thread.ofPlatform().daemon()
                .name("best-copy-", 0).factory()) : null;
        this.routines = Arrays.stream(HostCopyRoutine.values()).filter(HostCopyRoutine::isAvailable).toList();
    }

    /** The routines measured: every one this machine runs. */
    List<HostCopyRoutine> routines() {
        return routines;
    }

    /** GB/s of one copy of {@code bytes} bytes from {@code src} to {@code dst} with {@code routine} on all threads. */
    double copyGbps(HostCopyRoutine routine, MemorySegment src, MemorySegment dst, long bytes) {
        long t0 = System.nanoTime();
        List<Future<?>> parts = new ArrayList<>(threads - 1);
        for (int i = 1; i < threads; i++) {
            long from = partStart(i, bytes);
            long to = partStart(i + 1, bytes);
            parts.add(helpers.submit(() -> routine.copy(src, from, dst, from, to - from)));
        }
        routine.copy(src, 0, dst, 0, partStart(1, bytes));
        try {
            for (Future<?> part : parts) {
                part.get();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while the best copy ran", e);
        } catch (ExecutionException e) {
            throw new IllegalStateException("a part of the best copy failed", e.getCause());
        }
        return bytes / (double) (System.nanoTime() - t0);
    }

    private long partStart(int part, long bytes) {
        return part >= threads ? bytes : Math.min(bytes, bytes * part / threads / PART_ALIGNMENT * PART_ALIGNMENT);
    }

    @Override
    public void close() {
        if (helpers != null) {
            helpers.shutdownNow();
        }
    }
}
