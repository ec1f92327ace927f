package lmcache4j.engine.storage.disk;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

import com.sun.nio.file.ExtendedOpenOption;

import lmcache4j.allocator.DType;
import lmcache4j.allocator.HostArenaOptions;
import lmcache4j.allocator.MemoryFormat;
import lmcache4j.allocator.MemoryObj;
import lmcache4j.allocator.TensorShape;
import lmcache4j.allocator.host.HostArena;
import lmcache4j.allocator.tensor.TensorMemoryAllocator;

/** Allocators, seeded chunk contents and an independent O_DIRECT check for the disk tests (no JUnit here: the child JVM uses it). */
final class DiskTestChunks {
    /** [2, 4, 129, 509] bf16 = 1,050,888 bytes: 256 blocks of 4 KiB and a 2,312-byte tail. */
    static final TensorShape ODD = TensorShape.of(2, 4, 129, 509);
    /** [2, 8, 255, 1021] bf16 = 8,331,360 bytes: 2,034 blocks of 4 KiB and a 96-byte tail (the kill test's chunks). */
    static final TensorShape BIG_ODD = TensorShape.of(2, 8, 255, 1021);
    /** [2, 2, 256, 32] bf16 = 64 KiB exactly. */
    static final TensorShape ALIGNED = TensorShape.of(2, 2, 256, 32);
    /** [2, 1, 6, 5] bf16 = 120 bytes: only a tail. */
    static final TensorShape TINY = TensorShape.of(2, 1, 6, 5);

    private DiskTestChunks() {
    }

    /** A 4 KiB-aligned allocator over {@code bytes} of mmap memory, like the CPU tier's. */
    static TensorMemoryAllocator allocator(long bytes) {
        return TensorMemoryAllocator.create("disk-test", HostArena.allocate(bytes, HostArenaOptions.DEFAULT.withHugePages(false)),
                4096);
    }

    static MemoryObj allocate(TensorMemoryAllocator alloc, TensorShape shape, DType dtype, MemoryFormat format) {
        return alloc.allocate(shape, dtype, format)
                .orElseThrow(() -> new IllegalStateException("test allocator full: " + alloc.stats()));
    }

    /** A chunk of {@code shape} (bf16, KV_2LTD) filled from {@code seed}. */
    static MemoryObj chunk(TensorMemoryAllocator alloc, TensorShape shape, long seed) {
        MemoryObj obj = allocate(alloc, shape, DType.BFLOAT16, MemoryFormat.KV_2LTD);
        fill(obj.segment(), seed);
        return obj;
    }

    /** Fills {@code seg} with bytes that depend on {@code seed} and the offset (8 bytes per store). */
    static void fill(MemorySegment seg, long seed) {
        long n = seg.byteSize();
        long words = n >>> 3;
        for (long w = 0; w < words; w++) {
            seg.set(LE_LONG, w << 3, word(seed, w));
        }
        for (long off = words << 3; off < n; off++) {
            seg.set(ValueLayout.JAVA_BYTE, off, expected(seed, off));
        }
    }

    /** The first offset where {@code seg} differs from {@link #fill}'s bytes for {@code seed}, or -1. */
    static long mismatch(MemorySegment seg, long length, long seed) {
        return mismatch(seg, 0, length, seed);
    }

    /** Like {@link #mismatch(MemorySegment, long, long)} for the bytes from {@code from} (a multiple of 8) on. */
    static long mismatch(MemorySegment seg, long from, long length, long seed) {
        long words = length >>> 3;
        for (long w = from >>> 3; w < words; w++) {
            if (seg.get(LE_LONG, w << 3) != word(seed, w)) {
                for (long off = w << 3; ; off++) {
                    if (seg.get(ValueLayout.JAVA_BYTE, off) != expected(seed, off)) {
                        return off;
                    }
                }
            }
        }
        for (long off = words << 3; off < length; off++) {
            if (seg.get(ValueLayout.JAVA_BYTE, off) != expected(seed, off)) {
                return off;
            }
        }
        return -1;
    }

    static final ValueLayout.OfLong LE_LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(java.nio.ByteOrder.LITTLE_ENDIAN);

    private static long word(long seed, long w) {
        long x = (seed + 1) * 0x9E3779B97F4A7C15L + w * 0xBF58476D1CE4E5B9L;
        return x ^ (x >>> 29);
    }

    private static byte expected(long seed, long off) {
        return (byte) (word(seed, off >>> 3) >>> (8 * (off & 7)));
    }

    /** Whether an aligned O_DIRECT write and read work in {@code dir}, checked without ChunkFiles. */
    static boolean oDirectWorks(Path dir) {
        Path f = dir.resolve("odirect-check");
        try (var arena = java.lang.foreign.Arena.ofConfined();
             FileChannel ch = FileChannel.open(f, StandardOpenOption.CREATE, StandardOpenOption.READ,
                     StandardOpenOption.WRITE, ExtendedOpenOption.DIRECT)) {
            MemorySegment buf = arena.allocate(4096, 4096);
            buf.fill((byte) 5);
            ch.write(buf.asByteBuffer(), 0);
            buf.fill((byte) 0);
            ch.read(buf.asByteBuffer(), 0);
            return buf.get(ValueLayout.JAVA_BYTE, 4095) == 5;
        } catch (Exception e) {
            return false;
        } finally {
            try {
                Files.deleteIfExists(f);
            } catch (java.io.IOException ignored) {
                // best effort
            }
        }
    }
}
