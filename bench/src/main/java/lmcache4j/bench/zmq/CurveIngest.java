package lmcache4j.bench.zmq;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

import org.zeromq.ZMQ;

import lmcache4j.engine.controller.message.ControllerCodec;
import lmcache4j.engine.controller.message.ControllerMessage;
import lmcache4j.engine.controller.message.KVOpEvent;
import lmcache4j.engine.controller.message.MalformedMessageException;
import lmcache4j.engine.controller.message.OpType;
import lmcache4j.engine.controller.message.WorkerMsg;

/**
 * Admits per second a PULL of the library measured takes in and decodes as the controller does
 * ({@code ControllerCodec}), over CURVE and in the clear: LMCache's {@code BatchedKVOperationMsg}
 * frames of {@value #ADMITS_PER_FRAME} admits each, pushed by one PUSH of libzmq (so that the
 * sender's encryption is the same for both). What CURVE costs the controller's socket in each
 * library, apart from the index (which {@code bench controller} measures behind JeroMQ).
 */
public final class CurveIngest {
    static final int ADMITS_PER_FRAME = 64;
    private static final int RECEIVE_MILLIS = 30_000;

    public record Figures(double curveAdmitsPerSecond, double plainAdmitsPerSecond) {
        public double curveVsPlain() {
            return curveAdmitsPerSecond / plainAdmitsPerSecond;
        }
    }

    /** A CURVE key pair: 32-byte public and secret keys. */
    private record KeyPair(byte[] publicKey, byte[] secretKey) {
        static KeyPair generate() {
            ZMQ.Curve.KeyPair pair = ZMQ.Curve.generateKeyPair();
            return new KeyPair(ZMQ.Curve.z85Decode(pair.publicKey), ZMQ.Curve.z85Decode(pair.secretKey));
        }
    }

    private CurveIngest() {
    }

    /** The frames: {@code admits} admits in all, from eight workers in turn. */
    static List<byte[]> frames(long admits, long seed) {
        SplittableRandom random = new SplittableRandom(seed);
        List<byte[]> frames = new ArrayList<>();
        for (long made = 0; made < admits; made += ADMITS_PER_FRAME) {
            List<KVOpEvent> events = new ArrayList<>(ADMITS_PER_FRAME);
            for (int i = 0; i < ADMITS_PER_FRAME; i++) {
                events.add(new KVOpEvent(OpType.ADMIT, random.nextLong(), made + i));
            }
            frames.add(ControllerCodec.encode(new WorkerMsg.BatchedKVOperationMsg("bench-" + frames.size() % 8, 0,
                    "LocalCPUBackend", events)));
        }
        return frames;
    }

    static Figures measure(BenchLibrary server, BenchLibrary client, List<byte[]> frames) throws InterruptedException {
        double curve = once(server, client, frames, true);
        double plain = once(server, client, frames, false);
        return new Figures(curve, plain);
    }

    private static double once(BenchLibrary server, BenchLibrary client, List<byte[]> frames, boolean curve)
            throws InterruptedException {
        KeyPair serverKeys = KeyPair.generate();
        KeyPair clientKeys = KeyPair.generate();
        try (BenchSocket pull = server.socket(Kind.PULL); BenchSocket push = client.socket(Kind.PUSH)) {
            pull.linger(0);
            pull.receiveTimeout(RECEIVE_MILLIS);
            pull.receiveHighWaterMark(100_000);
            if (curve) {
                pull.curveServer(serverKeys.secretKey());
                push.curveClient(serverKeys.publicKey(), clientKeys.publicKey(), clientKeys.secretKey());
            }
            int port = pull.bindLoopback();
            push.linger(0);
            push.sendHighWaterMark(100_000);
            push.connect("tcp://127.0.0.1:" + port);
            push.send(frames.getFirst(), false); // through the handshake before the clock starts
            decode(pull);
            Thread sender = Thread.ofPlatform().name("lmcache4j-bench-zmq-push").unstarted(() -> {
                for (byte[] f : frames) {
                    push.send(f, false);
                }
            });
            long t0 = System.nanoTime();
            sender.start();
            long admits = 0;
            for (int i = 0; i < frames.size(); i++) {
                admits += decode(pull);
            }
            long nanos = System.nanoTime() - t0;
            sender.join();
            return admits / (nanos / 1e9);
        }
    }

    /** Receives one frame and decodes it; returns its admits. */
    private static int decode(BenchSocket pull) {
        byte[] frame = pull.recv();
        if (frame == null) {
            throw new IllegalStateException("no frame within " + RECEIVE_MILLIS + " ms");
        }
        try {
            ControllerMessage m = ControllerCodec.decode(frame);
            if (!(m instanceof WorkerMsg.BatchedKVOperationMsg batch)) {
                throw new IllegalStateException("decoded " + m.getClass().getSimpleName() + ", not a batch");
            }
            return batch.operations().size();
        } catch (MalformedMessageException e) {
            throw new IllegalStateException("a frame did not decode: " + e.getMessage(), e);
        }
    }
}
