package lmcache4j.tests;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.management.BufferPoolMXBean;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;

/**
 * What a long run must not grow: live heap (after a full GC), direct buffers, threads and open file
 * descriptors of this JVM.
 */
record ResourceGauges(long heapBytes, long directBytes, int threads, long fileDescriptors) {
    static ResourceGauges measure() {
        for (int i = 0; i < 3; i++) {
            System.gc(); // several: objects with cleaners are freed on a later cycle
        }
        long direct = ManagementFactory.getPlatformMXBeans(BufferPoolMXBean.class).stream()
                .filter(pool -> pool.getName().equals("direct")).mapToLong(BufferPoolMXBean::getMemoryUsed).sum();
        return new ResourceGauges(ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed(), direct,
                ManagementFactory.getThreadMXBean().getThreadCount(), openFileDescriptors());
    }

    private static long openFileDescriptors() {
        try (Stream<Path> fds = Files.list(Path.of("/proc/self/fd"))) {
            return fds.count();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Override
    public String toString() {
        return String.format(java.util.Locale.ROOT, "heap %.1f MiB, direct %.1f MiB, %d threads, %d fds",
                heapBytes / 1048576.0, directBytes / 1048576.0, threads, fileDescriptors);
    }
}
