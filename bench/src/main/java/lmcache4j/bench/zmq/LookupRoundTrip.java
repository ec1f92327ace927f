package lmcache4j.bench.zmq;

import java.util.Arrays;
import java.util.OptionalInt;

import lmcache4j.server.mp.wire.IpcCacheServerKey;
import lmcache4j.server.mp.wire.MpKeyCodec;
import lmcache4j.server.mp.wire.MpOperation;
import lmcache4j.server.mp.wire.MpScalars;
import lmcache4j.server.mp.wire.MpSchema;

/**
 * The round trip of the MP server's {@code lookup} frames ({@code [uid, op, key, tp]}, the key a
 * prompt's token ids as LMCache's client encodes them) between a DEALER of libzmq (the library
 * vLLM's client runs on, through pyzmq) and a ROUTER of the library measured that answers
 * {@code [uid, op]} at once: what the MP server's socket adds to each scheduling step, apart from
 * the server's work.
 */
public final class LookupRoundTrip {
    static final String MODEL = "meta-llama/Meta-Llama-3-8B";
    private static final int REPLY_MILLIS = 10_000;

    public record Figures(double p50Micros, double p99Micros) {
    }

    private LookupRoundTrip() {
    }

    /** The frames of one lookup of a {@code tokens}-token prompt. */
    static byte[][] frames(int tokens) {
        int[] ids = new int[tokens];
        for (int i = 0; i < tokens; i++) {
            ids[i] = 1_000 + i * 7 % 30_000;
        }
        byte[] key = MpKeyCodec.encode(new IpcCacheServerKey(MODEL, 1, OptionalInt.empty(), ids, 0, tokens, "bench-zmq",
                "", 0), MpSchema.BASE);
        return new byte[][] {MpScalars.encodeInt(1), MpScalars.encodeInt(MpOperation.LOOKUP.id()), key,
                MpScalars.encodeInt(1)};
    }

    /** {@code roundTrips} timed round trips (after a tenth as many untimed) to an echo of {@code server}. */
    static Figures measure(BenchLibrary server, BenchLibrary client, byte[][] frames, int roundTrips) {
        try (Echo echo = Echo.start(server); BenchSocket dealer = client.socket(Kind.DEALER)) {
            dealer.linger(0);
            dealer.receiveTimeout(REPLY_MILLIS);
            dealer.connect("tcp://127.0.0.1:" + echo.port());
            for (int i = 0; i < roundTrips / 10; i++) {
                roundTrip(dealer, frames);
            }
            double[] micros = new double[roundTrips];
            for (int i = 0; i < roundTrips; i++) {
                micros[i] = roundTrip(dealer, frames) / 1e3;
            }
            Arrays.sort(micros);
            return new Figures(Stats.percentile(micros, 0.5), Stats.percentile(micros, 0.99));
        }
    }

    private static long roundTrip(BenchSocket dealer, byte[][] frames) {
        long t0 = System.nanoTime();
        for (int i = 0; i < frames.length; i++) {
            dealer.send(frames[i], i < frames.length - 1);
        }
        byte[] uid = dealer.recv();
        if (uid == null || !dealer.more()) {
            throw new IllegalStateException("the echo did not answer within " + REPLY_MILLIS + " ms");
        }
        byte[] op = dealer.recv();
        long nanos = System.nanoTime() - t0;
        if (!Arrays.equals(uid, frames[0]) || !Arrays.equals(op, frames[1])) {
            throw new IllegalStateException("the echo answered another request");
        }
        return nanos;
    }

    /** A ROUTER on its own thread answering each request {@code [identity, uid, op, ...]} with {@code [identity, uid, op]}. */
    private static final class Echo implements AutoCloseable {
        private final BenchSocket router;
        private final int port;
        private final Thread loop;
        private volatile boolean running = true;

        private Echo(BenchLibrary library) {
            router = library.socket(Kind.ROUTER);
            router.linger(0);
            router.receiveTimeout(20);
            port = router.bindLoopback();
            loop = Thread.ofPlatform().name("lmcache4j-bench-zmq-echo").daemon().unstarted(this::serve);
        }

        static Echo start(BenchLibrary library) {
            Echo echo = new Echo(library);
            echo.loop.start();
            return echo;
        }

        int port() {
            return port;
        }

        private void serve() {
            byte[][] head = new byte[3][];
            while (running) {
                byte[] identity = router.recv();
                if (identity == null) {
                    continue;
                }
                int n = 0;
                head[n++] = identity;
                while (router.more()) {
                    byte[] f = router.recv();
                    if (n < head.length) {
                        head[n++] = f;
                    }
                }
                if (n == head.length) {
                    router.send(head[0], true);
                    router.send(head[1], true);
                    router.send(head[2], false);
                }
            }
        }

        @Override
        public void close() {
            running = false;
            try {
                loop.join(5_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            router.close();
        }
    }
}
