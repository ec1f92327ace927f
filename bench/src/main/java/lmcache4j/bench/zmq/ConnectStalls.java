package lmcache4j.bench.zmq;

import java.util.Arrays;

/**
 * Connects that stall: a PUSH connects and at once queues a burst (as an engine reporting right
 * after it starts does), and the time from {@code connect} to the first message at the PULL is
 * taken, over many connects. A loopback handshake takes milliseconds; a connect whose first message
 * took a second or more counts as stalled. The connecting sockets' handshake timer is
 * {@value #HANDSHAKE_MILLIS} ms, so that a stalled connect (which waits for that timer to remake it;
 * 30 s by default) costs the run seconds, not minutes.
 */
public final class ConnectStalls {
    static final int HANDSHAKE_MILLIS = 2_000;
    static final long STALL_MILLIS = 1_000;
    private static final int FIRST_MESSAGE_MILLIS = 10_000;

    /** One library's connects: how many stalled, and the time to the first message (median, worst). */
    public record Figures(int connects, int stalls, double medianMillis, double worstMillis) {
        public double stallsPerThousand() {
            return 1_000.0 * stalls / connects;
        }
    }

    private ConnectStalls() {
    }

    /**
     * {@code connects} PUSH sockets of {@code library}, each queueing {@code burst} frames, to a PULL
     * of {@code server}, another context of the same library: a server's I/O thread shared with the
     * clients would, by its own work, hide a client's lost registration (JeroMQ's stall).
     */
    static Figures measure(BenchLibrary server, BenchLibrary library, int connects, int burst) {
        double[] millis = new double[connects];
        int stalls = 0;
        byte[] frame = new byte[16];
        try (BenchSocket pull = server.socket(Kind.PULL)) {
            pull.linger(0);
            pull.receiveHighWaterMark(2 * burst);
            pull.receiveTimeout(FIRST_MESSAGE_MILLIS);
            String endpoint = "tcp://127.0.0.1:" + pull.bindLoopback();
            for (int i = 0; i < connects; i++) {
                try (BenchSocket push = library.socket(Kind.PUSH)) {
                    push.linger(0);
                    push.sendHighWaterMark(2 * burst);
                    push.handshakeTimeout(HANDSHAKE_MILLIS);
                    long t0 = System.nanoTime();
                    push.connect(endpoint);
                    for (int m = 0; m < burst; m++) {
                        push.send(frame, false);
                    }
                    if (pull.recv() == null) {
                        throw new IllegalStateException(library.name() + ": connect " + i + " delivered nothing in "
                                + FIRST_MESSAGE_MILLIS + " ms");
                    }
                    millis[i] = (System.nanoTime() - t0) / 1e6;
                    if (millis[i] >= STALL_MILLIS) {
                        stalls++;
                    }
                    for (int m = 1; m < burst; m++) {
                        if (pull.recv() == null) {
                            throw new IllegalStateException(library.name() + ": connect " + i + " lost message " + m);
                        }
                    }
                }
            }
        }
        Arrays.sort(millis);
        return new Figures(connects, stalls, Stats.percentile(millis, 0.5), millis[connects - 1]);
    }
}
