package lmcache4j.engine.storage.disk;

import java.nio.file.Path;

import lmcache4j.allocator.MemoryObj;
import lmcache4j.allocator.tensor.TensorMemoryAllocator;
import lmcache4j.engine.storage.TestChunks;

/**
 * Child process of {@link ChunkFilesKillTest}: writes chunks {@code first, first+1, ...} (shape
 * {@link DiskTestChunks#BIG_ODD}: the seed-0 pattern with the chunk's index in its first 8 bytes, so
 * that the process spends its time in writes, not in filling) into a directory with O_DIRECT (when it works) and
 * fsync, printing {@code wrote <i> in <µs> us} after each write returns, until killed or {@code count} are done.
 * Args: directory, first index, count.
 */
public final class ChunkWriterMain {
    private ChunkWriterMain() {
    }

    public static void main(String[] args) throws Exception {
        Path dir = Path.of(args[0]);
        int first = Integer.parseInt(args[1]);
        int count = Integer.parseInt(args[2]);
        ChunkFiles files = new ChunkFiles(dir, true, true);
        System.out.println("ready " + files.directIo());
        System.out.flush();
        try (TensorMemoryAllocator alloc = DiskTestChunks.allocator(16L << 20)) {
            MemoryObj obj = DiskTestChunks.chunk(alloc, DiskTestChunks.BIG_ODD, 0);
            for (int i = first; i < first + count; i++) {
                obj.segment().set(DiskTestChunks.LE_LONG, 0, i);
                long t0 = System.nanoTime();
                files.write(TestChunks.key(i), obj);
                System.out.println("wrote " + i + " in " + (System.nanoTime() - t0) / 1000 + " us");
                System.out.flush();
            }
            obj.release();
        }
    }
}
