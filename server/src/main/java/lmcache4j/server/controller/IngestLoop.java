package lmcache4j.server.controller;

import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.zeromq.ZMQ;
import org.zeromq.ZMQException;

import lmcache4j.server.controller.ControllerMetrics.Socket;
import lmcache4j.server.controller.registry.WorkerRegistry;

/**
 * The controller's ingestion thread: it owns the PULL and both ROUTER sockets (ZeroMQ sockets are
 * single-threaded), polls them, hands every frame to the {@link IngestHandler}, answers ROUTER
 * requests, and drops workers whose heartbeats stopped. Being the only thread that changes the
 * index and the registry is what makes the index single-writer.
 */
final class IngestLoop implements Runnable {
    private static final System.Logger LOG = System.getLogger(IngestLoop.class.getName());
    private static final int POLL_MILLIS = 50;
    /** Frames read from one socket before the others get a turn. */
    private static final int BURST = 256;

    private final ZMQ.Poller poller;
    private final ZMQ.Socket pull;
    private final ZMQ.Socket reply;
    private final ZMQ.Socket heartbeat;
    private final IngestHandler handler;
    private final WorkerRegistry registry;
    private final ControllerMetrics metrics;
    private final long sweepNanos;
    private final CountDownLatch stopped = new CountDownLatch(1);
    private volatile boolean running = true;

    IngestLoop(ZMQ.Poller poller, ZMQ.Socket pull, ZMQ.Socket reply, ZMQ.Socket heartbeat, IngestHandler handler,
               WorkerRegistry registry, ControllerMetrics metrics) {
        this.poller = Objects.requireNonNull(poller);
        this.pull = pull;
        this.reply = reply;
        this.heartbeat = heartbeat;
        this.handler = handler;
        this.registry = registry;
        this.metrics = metrics;
        // Check liveness several times per timeout so a dead worker goes within ~1.25 timeouts.
        this.sweepNanos = Math.max(Duration.ofMillis(100).toNanos(), registry.timeout().toNanos() / 4);
    }

    @Override
    public void run() {
        long nextSweep = System.nanoTime() + sweepNanos;
        try {
            while (running) {
                int ready;
                try {
                    ready = poller.poll(POLL_MILLIS);
                } catch (ZMQException e) {
                    if (!running) {
                        break;
                    }
                    throw e;
                }
                if (ready > 0) {
                    if (poller.pollin(0)) {
                        drainPull();
                    }
                    if (poller.pollin(1)) {
                        drainRouter(reply, Socket.REPLY);
                    }
                    if (poller.pollin(2)) {
                        drainRouter(heartbeat, Socket.HEARTBEAT);
                    }
                }
                if (System.nanoTime() - nextSweep >= 0) {
                    nextSweep = System.nanoTime() + sweepNanos;
                    for (var ignored : registry.dropExpired()) {
                        metrics.workerExpired();
                    }
                }
            }
        } catch (RuntimeException e) {
            if (running) {
                LOG.log(System.Logger.Level.ERROR, "the controller's ingestion thread failed", e);
            }
        } finally {
            stopped.countDown();
        }
    }

    private void drainPull() {
        for (int i = 0; i < BURST; i++) {
            byte[] frame = pull.recv(ZMQ.DONTWAIT);
            if (frame == null) {
                return;
            }
            handler.onPull(frame);
            while (pull.hasReceiveMore()) { // a multipart push: one message per frame
                handler.onPull(pull.recv(0));
            }
        }
    }

    /**
     * A DEALER (or REQ) peer's request arrives as [identity, empty delimiter, payload]; the answer
     * goes back as [identity, empty, reply]. Any other shape is malformed: counted and, when an
     * identity is known, answered with an ErrorMsg so a waiting peer is not left hanging.
     */
    private void drainRouter(ZMQ.Socket router, Socket label) {
        for (int i = 0; i < BURST; i++) {
            byte[] identity = router.recv(ZMQ.DONTWAIT);
            if (identity == null) {
                return;
            }
            byte[][] rest = new byte[2][];
            int parts = 0;
            boolean extra = false;
            while (router.hasReceiveMore()) {
                byte[] part = router.recv(0);
                if (parts < 2) {
                    rest[parts] = part;
                }
                extra |= parts >= 2;
                parts++;
            }
            byte[] answer;
            if (parts == 2 && rest[0].length == 0 && !extra) {
                answer = label == Socket.HEARTBEAT ? handler.onHeartbeat(rest[1]) : handler.onRequest(rest[1]);
            } else if (parts == 1 && !extra) {
                // No delimiter (a raw DEALER without the empty frame): still answerable the same way.
                answer = label == Socket.HEARTBEAT ? handler.onHeartbeat(rest[0]) : handler.onRequest(rest[0]);
                router.send(identity, ZMQ.SNDMORE);
                router.send(answer, 0);
                continue;
            } else {
                handler.malformedEnvelope(label);
                answer = Wire.encode(new lmcache4j.engine.controller.message.ErrorMsg(
                        "malformed envelope: expected [empty delimiter, one message], got " + parts + " frames"));
            }
            router.send(identity, ZMQ.SNDMORE);
            router.send(new byte[0], ZMQ.SNDMORE);
            router.send(answer, 0);
        }
    }

    /** Asks the loop to stop and waits for it (at most {@code timeout}). */
    void stop(Duration timeout) throws InterruptedException {
        running = false;
        stopped.await(timeout.toMillis(), TimeUnit.MILLISECONDS);
    }
}
