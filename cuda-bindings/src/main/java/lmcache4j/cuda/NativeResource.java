package lmcache4j.cuda;

import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A native resource released exactly once: {@link #close()} is idempotent, use after close is an
 * {@link IllegalStateException} naming the resource, never a call on a dangling handle.
 */
abstract class NativeResource implements AutoCloseable {
    private final AtomicBoolean closed = new AtomicBoolean();

    /** Frees the native resource; called at most once. */
    protected abstract void release();

    /** Throws if {@link #close()} has run. */
    protected final void ensureOpen() {
        if (closed.get()) {
            throw new IllegalStateException(this + " is closed");
        }
    }

    /** Whether {@link #close()} has run. */
    public final boolean isClosed() {
        return closed.get();
    }

    @Override
    public final void close() {
        if (closed.compareAndSet(false, true)) {
            release();
        }
    }
}
