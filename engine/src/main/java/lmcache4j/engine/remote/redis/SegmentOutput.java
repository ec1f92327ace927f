package lmcache4j.engine.remote.redis;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;

import io.lettuce.core.output.CommandOutput;

/**
 * The output of a payload GET: copies the bulk reply from Netty's receive buffer straight into
 * {@code target} (the allocated object's segment) when its length matches, and yields the reply's
 * length, {@link #ABSENT} for a nil reply. {@link #cancel()} (after a timeout or failure, before the
 * object is released) guarantees that a late reply no longer writes into the segment.
 */
final class SegmentOutput extends CommandOutput<byte[], ByteBuffer, Long> {
    static final long ABSENT = -1;

    private final MemorySegment target;
    private boolean cancelled;

    SegmentOutput(MemorySegment target) {
        super(RedisBytesCodec.INSTANCE, null);
        this.target = target;
    }

    @Override
    public void set(ByteBuffer bytes) {
        synchronized (this) {
            if (bytes == null) {
                output = ABSENT;
                return;
            }
            long n = bytes.remaining();
            if (!cancelled && n == target.byteSize()) {
                MemorySegment.copy(MemorySegment.ofBuffer(bytes), 0, target, 0, n);
            }
            output = n;
        }
    }

    /** No write into the segment after this returns. */
    synchronized void cancel() {
        cancelled = true;
    }
}
