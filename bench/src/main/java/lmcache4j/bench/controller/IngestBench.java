package lmcache4j.bench.controller;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

import lmcache4j.engine.security.DeploymentSecret;
import lmcache4j.engine.controller.message.ControllerCodec;
import lmcache4j.engine.controller.message.KVOpEvent;
import lmcache4j.engine.controller.message.OpType;
import lmcache4j.engine.controller.message.WorkerMsg;
import lmcache4j.engine.controller.message.WorkerReqMsg;
import lmcache4j.server.controller.ControllerConfig;
import lmcache4j.server.controller.ControllerServer;
import lmcache4j.engine.zmq.OwnedZContext;
import lmcache4j.server.controller.internal.ControllerParts;

/**
 * Ingestion through the controller against its limit in the same process: the same pre-encoded
 * multipart pushes (each frame a {@code BatchedKVOperationMsg} of admits, as LMCache's workers
 * batch them) sent by one PUSH socket to (a) a bare JeroMQ PULL socket that only receives the
 * frames, and (b) a controller, which decodes them and indexes every admit. Each run ends when
 * the last frame was received (raw) or the last admit is in the index (controller).
 */
final class IngestBench {
    /** One run's rates, in KV operations (LMCache admit messages) per second. */
    record Run(double controllerOpsPerSecond, double rawOpsPerSecond, double curveOpsPerSecond) {
    }

    /** A run that has not finished after this long failed. */
    private static final long DEADLINE_NANOS = 120_000_000_000L;

    private final List<byte[][]> pushes = new ArrayList<>();
    private final long ops;
    private final int workers;

    /**
     * @param ops           admits in all
     * @param opsPerFrame   admits per BatchedKVOperationMsg frame
     * @param framesPerPush frames per multipart push
     */
    IngestBench(long ops, int opsPerFrame, int framesPerPush, int workers, long seed) {
        this.workers = workers;
        SplittableRandom random = new SplittableRandom(seed);
        long made = 0;
        long frame = 0;
        while (made < ops) {
            byte[][] push = new byte[framesPerPush][];
            int n = 0;
            while (n < framesPerPush && made < ops) {
                int count = (int) Math.min(opsPerFrame, ops - made);
                List<KVOpEvent> events = new ArrayList<>(count);
                for (int i = 0; i < count; i++) {
                    events.add(new KVOpEvent(OpType.ADMIT, random.nextLong(), made + i));
                }
                int worker = (int) (frame++ % workers);
                push[n++] = ControllerCodec.encode(new WorkerMsg.BatchedKVOperationMsg("bench-" + worker, 0,
                        "LocalCPUBackend", events));
                made += count;
            }
            pushes.add(n == push.length ? push : Arrays.copyOf(push, n));
        }
        this.ops = made;
    }

    long ops() {
        return ops;
    }

    long frames() {
        return pushes.stream().mapToLong(p -> p.length).sum();
    }

    long bytes() {
        return pushes.stream().flatMap(Arrays::stream).mapToLong(f -> f.length).sum();
    }

    /** Raw first, then the controller, then the controller with a deployment secret (CURVE), in one call: drift hits all. */
    Run run() throws InterruptedException {
        double raw = raw();
        double controller = controller(Optional.empty());
        Path dir;
        try {
            dir = Files.createTempDirectory("lmcache4j-ingest-bench");
        } catch (IOException e) {
            throw new UncheckedIOException("cannot make a directory for the secured run's secret file", e);
        }
        try {
            return new Run(controller, raw, controller(Optional.of(dir.resolve("secret"))));
        } finally {
            try {
                Files.deleteIfExists(dir.resolve("secret"));
                Files.deleteIfExists(dir);
            } catch (IOException e) {
                // a temporary file left behind
            }
        }
    }

    private static final AtomicInteger MONITORS = new AtomicInteger();

    private double raw() throws InterruptedException {
        long frames = frames();
        try (ZContext ctx = new OwnedZContext("bench-ingest-bench", 1)) {
            ZMQ.Socket pull = ctx.createSocket(SocketType.PULL);
            pull.setRcvHWM(100_000);
            pull.bind("tcp://127.0.0.1:*"); // a port the kernel picks, free for sure
            int port = lmcache4j.server.controller.Endpoint.parse(pull.getLastEndpoint()).port();
            AtomicLong doneAt = new AtomicLong();
            pull.setReceiveTimeOut((int) (DEADLINE_NANOS / 1_000_000));
            AtomicLong received = new AtomicLong();
            Thread receiver = Thread.ofPlatform().name("bench-raw-pull").start(() -> {
                long got = 0;
                while (got < frames) {
                    byte[] f = pull.recv(0);
                    if (f == null) {
                        break; // nothing for the whole deadline: reported below
                    }
                    got++;
                }
                received.set(got);
                doneAt.set(System.nanoTime());
            });
            long t0 = send(ctx, "tcp://127.0.0.1:" + port, Optional.empty());
            receiver.join();
            if (received.get() < frames) {
                throw new IllegalStateException("the bare PULL socket received " + received.get() + " of " + frames + " frames");
            }
            return ops / ((doneAt.get() - t0) / 1e9);
        }
    }

    /** With {@code secretFile}, the secured run: a fresh secret is written there first. */
    private double controller(Optional<Path> secretFile) throws InterruptedException {
        Optional<DeploymentSecret> secret;
        try {
            secret = secretFile.isEmpty() ? Optional.empty() : Optional.of(DeploymentSecret.createFile(secretFile.get()));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write the secured run's secret file " + secretFile.get(), e);
        }
        ControllerConfig config = ControllerConfig.loopbackAnyPorts().withLimits(8 << 20, 2, 64L << 20, (int) Math.min(1 << 28, ops))
                .withTimeouts(Duration.ofHours(1), Duration.ofSeconds(5)) // the bench's workers never beat
                .withSecretFile(secretFile);
        try (ControllerServer controller = ControllerServer.start(config); ZContext ctx = new OwnedZContext("bench-ingest-bench", 1)) {
            ZMQ.Socket dealer = ctx.createSocket(SocketType.DEALER);
            secret.ifPresent(k -> k.connectAsMember(dealer));
            dealer.connect(controller.replyEndpoint().connectAddress());
            for (int w = 0; w < workers; w++) { // only registered workers are indexed
                dealer.send(new byte[0], ZMQ.SNDMORE);
                dealer.send(ControllerCodec.encode(new WorkerReqMsg.RegisterMsg("bench-" + w, 0, "127.0.0.1", 1, Optional.empty())), 0);
                dealer.recv(0);
                dealer.recv(0);
            }
            long t0 = send(ctx, controller.pullEndpoint().connectAddress(), secret);
            long deadline = t0 + DEADLINE_NANOS;
            while (ControllerParts.index(controller).entries() < ops) {
                Thread.sleep(0, 200_000); // poll lightly: the ingestion thread needs the core
                if (System.nanoTime() - deadline > 0) {
                    throw new IllegalStateException("the controller indexed " + ControllerParts.index(controller).entries() + " of " + ops
                            + " admits in " + DEADLINE_NANOS / 1_000_000_000L + " s; " + controller.describeCounts());
                }
            }
            long t1 = System.nanoTime();
            return ops / ((t1 - t0) / 1e9);
        }
    }

    /**
     * Sends every push from this thread; returns when the first was sent. The connection is made
     * first (its ZMTP handshake done), and only then is the clock started: the runs measure
     * ingestion, not connection setup, for the bare socket and the controller alike.
     */
    private long send(ZContext ctx, String address, Optional<DeploymentSecret> secret) {
        ZMQ.Socket push = ctx.createSocket(SocketType.PUSH);
        secret.ifPresent(k -> k.connectAsMember(push));
        push.setSndHWM(100_000);
        push.setLinger(5_000);
        String monitorAddress = "inproc://ingest-bench-monitor-" + MONITORS.incrementAndGet();
        push.monitor(monitorAddress, ZMQ.EVENT_HANDSHAKE_PROTOCOL);
        ZMQ.Socket monitor = ctx.createSocket(SocketType.PAIR);
        monitor.connect(monitorAddress);
        monitor.setReceiveTimeOut(30_000);
        push.connect(address);
        if (ZMQ.Event.recv(monitor) == null) {
            throw new IllegalStateException("the bench's PUSH socket did not finish connecting to " + address + " in 30 s");
        }
        push.monitor(null, 0);
        ctx.destroySocket(monitor);
        long t0 = System.nanoTime();
        for (byte[][] p : pushes) {
            for (int i = 0; i < p.length; i++) {
                push.send(p[i], i < p.length - 1 ? ZMQ.SNDMORE : 0);
            }
        }
        return t0;
    }
}
