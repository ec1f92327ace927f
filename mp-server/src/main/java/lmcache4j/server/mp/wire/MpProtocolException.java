package lmcache4j.server.mp.wire;

import java.util.Objects;

/**
 * A request that breaks LMCache's multiprocess protocol. It is checked because every caller must
 * decide what to do with it, and the only answer the protocol allows is to log, count under
 * {@link #reason()} and drop the request (there is no error reply, docs/design/mp-server.md §2).
 */
public final class MpProtocolException extends Exception {
    private static final long serialVersionUID = 1L;

    private final transient MpDropReason reason;

    /** A violation of the given kind; the message says what was wrong and what was expected. */
    public MpProtocolException(MpDropReason reason, String message) {
        super(message);
        this.reason = Objects.requireNonNull(reason, "reason");
    }

    /** As {@link #MpProtocolException(MpDropReason, String)}, keeping the decoder's own failure. */
    public MpProtocolException(MpDropReason reason, String message, Throwable cause) {
        super(message, cause);
        this.reason = Objects.requireNonNull(reason, "reason");
    }

    /** The kind of violation: the {@code reason} label of the drop counter. */
    public MpDropReason reason() {
        return reason;
    }
}
