package lmcache4j.engine.pd;

import java.util.Objects;
import java.util.Optional;

import lmcache4j.engine.connector.ExternalKvCache;
import lmcache4j.engine.pd.wire.PdPusher;

/**
 * One request's push to its decoder, fed as its prefill computes: call {@link #pushComputed} after
 * each batch of positions, then {@link #finish()} once. Made by {@link PdSender#begin}. Not
 * thread-safe: the prefill's thread calls it.
 */
public final class PdTransfer {
    /**
     * What a request's push did.
     *
     * @param pushedChunks      chunks written into the decoder's buffer
     * @param alreadySentChunks chunks the decoder held or was being sent already
     * @param refusedChunks     chunks the decoder had no room for (it computes them)
     * @param failedChunks      chunks not pushed because the push stopped (a failure, a timeout, a refusal before them)
     * @param pushedBytes       bytes written
     * @param stopReason        why the push stopped early, if it did
     * @param notified          whether the proxy acknowledged the ready notice
     * @param stagingWaitNanos  time the prefill waited for staging room
     * @param drainNanos        time {@link #finish()} waited for the last chunks to be sent
     */
    public record Result(int pushedChunks, int alreadySentChunks, int refusedChunks, int failedChunks, long pushedBytes,
                         Optional<String> stopReason, boolean notified, long stagingWaitNanos, long drainNanos) {
    }

    private final PdPusher.Transfer transfer;
    private boolean finished;

    PdTransfer(PdPusher.Transfer transfer) {
        this.transfer = Objects.requireNonNull(transfer, "transfer");
    }

    /** The request's id (what the proxy is told). */
    public String requestId() {
        return transfer.reqId();
    }

    /**
     * Gathers each chunk lying wholly within the first {@code computedPositions} positions of
     * {@code kv} that was not pushed yet (and the request's last, partial chunk once every position is
     * computed) and queues it for sending; returns without waiting for the network.
     */
    public void pushComputed(ExternalKvCache kv, int computedPositions) {
        Objects.requireNonNull(kv, "kv");
        if (finished) {
            throw new IllegalStateException("the push of " + requestId() + " is finished");
        }
        transfer.pushComputed(kv, computedPositions);
    }

    /**
     * Waits (bounded by {@code pd_timeout_ms} per chunk still queued) until every queued chunk is sent
     * or given up, then tells the proxy the request is ready. Call once.
     */
    public Result finish() {
        if (finished) {
            throw new IllegalStateException("the push of " + requestId() + " is finished already");
        }
        finished = true;
        PdPusher.Result r = transfer.finish();
        return new Result(r.pushedChunks(), r.alreadySentChunks(), r.refusedChunks(), r.failedChunks(), r.pushedBytes(),
                r.stopReason(), r.notified(), r.stagingWaitNanos(), r.drainNanos());
    }
}
