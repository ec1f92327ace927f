package lmcache4j.bench.demo;

import java.lang.foreign.MemorySegment;

import lmcache4j.allocator.HostArenaOptions;
import lmcache4j.allocator.host.HostArena;

/**
 * What a plain copy achieves on this machine, in this process: {@link MemorySegment#copy} between
 * two large off-heap buffers (made, and touched beforehand, like the CPU tier's memory) of a given
 * total of bytes, in pieces of a given size. The yardstick for the engine's store and retrieve
 * bandwidth.
 *
 * <p>The piece size matters: for a single copy of 2.5 MiB or more the JDK's x86 copy stub switches
 * to non-temporal stores, which skip reading the destination into the cache first, and runs up to
 * about twice as fast as a copy of the same bytes in small pieces. The engine's connector copies one
 * paged block of one layer and plane at a time (32 KiB with 16-token blocks of 8 × 128 bf16), so
 * the demo reports memcpy in both chunk-sized and block-sized pieces.
 */
public final class MemcpyBaseline implements AutoCloseable {
    /** Each buffer is at most this large (well beyond any last-level cache), at least one piece. */
    static final long MAX_BUFFER_BYTES = 512L << 20;

    /**
     * @param bytes       bytes copied
     * @param pieceBytes  bytes per {@code MemorySegment.copy}
     * @param bufferBytes bytes of each of the two buffers
     * @param nanos       time the copies took
     */
    public record Result(long bytes, long pieceBytes, long bufferBytes, long nanos) {
        public double gbps() {
            return nanos == 0 ? 0 : bytes / (double) nanos;
        }
    }

    private final HostArena a;
    private final HostArena b;
    private final long bufferBytes;

    /** Two buffers of {@code bufferBytes} (capped), touched before any measurement. */
    public MemcpyBaseline(long bufferBytes, HostArenaOptions options) {
        this.bufferBytes = Math.min(bufferBytes, MAX_BUFFER_BYTES);
        this.a = HostArena.allocate(this.bufferBytes, options);
        try {
            this.b = HostArena.allocate(this.bufferBytes, options);
        } catch (RuntimeException e) {
            a.close();
            throw e;
        }
        a.segment().fill((byte) 1); // fault every page in before timing
        b.segment().fill((byte) 2);
    }

    /** Copies {@code totalBytes} (rounded up to whole pieces) in pieces of {@code pieceBytes}, cycling over the buffers. */
    public Result measure(long totalBytes, long pieceBytes) {
        long perBuffer = bufferBytes / pieceBytes;
        if (perBuffer < 1) {
            throw new IllegalArgumentException("pieces of " + pieceBytes + " bytes do not fit buffers of " + bufferBytes);
        }
        long pieces = Math.max(1, (totalBytes + pieceBytes - 1) / pieceBytes);
        MemorySegment src = a.segment();
        MemorySegment dst = b.segment();
        for (long i = 0; i < perBuffer; i++) { // warm the copy path up
            MemorySegment.copy(src, i * pieceBytes, dst, i * pieceBytes, pieceBytes);
        }
        long started = System.nanoTime();
        for (long i = 0; i < pieces; i++) {
            long offset = (i % perBuffer) * pieceBytes;
            MemorySegment.copy(src, offset, dst, offset, pieceBytes);
        }
        long nanos = System.nanoTime() - started;
        return new Result(pieces * pieceBytes, pieceBytes, perBuffer * pieceBytes, nanos);
    }

    /** Frees both buffers. */
    @Override
    public void close() {
        try {
            a.close();
        } finally {
            b.close();
        }
    }
}
