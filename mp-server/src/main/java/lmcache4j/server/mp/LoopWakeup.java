package lmcache4j.server.mp;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.Pipe;
import java.nio.channels.SelectableChannel;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Wakes the MP server's loop from other threads (HTTP handlers, loads from the lower tiers): a pipe
 * the loop's poller watches beside the ROUTER, so work handed to the loop runs at once instead of at
 * the ROUTER's next receive timeout. Wakes coalesce: one byte stands for any number of them.
 */
final class LoopWakeup implements AutoCloseable {
    private final Pipe pipe;
    private final AtomicBoolean pending = new AtomicBoolean();
    private final ByteBuffer drained = ByteBuffer.allocate(64);

    LoopWakeup() throws IOException {
        pipe = Pipe.open();
        pipe.source().configureBlocking(false);
        pipe.sink().configureBlocking(false);
    }

    /** What the loop's poller watches. */
    SelectableChannel channel() {
        return pipe.source();
    }

    /** Any thread: the loop's next poll returns at once. */
    void wake() {
        if (pending.compareAndSet(false, true)) {
            try {
                pipe.sink().write(ByteBuffer.wrap(new byte[1]));
            } catch (IOException e) {
                // closed: the loop is stopping and has nothing left to run
            }
        }
    }

    /** The loop thread, when its poller saw the pipe readable: consumes the wake. */
    void drain() {
        pending.set(false); // before reading: a wake from now on writes a new byte
        try {
            while (pipe.source().read(drained.clear()) > 0) {
                // empty the pipe
            }
        } catch (IOException e) {
            // closed: the loop is stopping
        }
    }

    @Override
    public void close() {
        try {
            pipe.sink().close();
        } catch (IOException e) {
            // nothing to release further
        }
        try {
            pipe.source().close();
        } catch (IOException e) {
            // nothing to release further
        }
    }
}
