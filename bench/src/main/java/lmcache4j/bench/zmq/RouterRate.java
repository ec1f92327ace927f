package lmcache4j.bench.zmq;

import java.util.ArrayList;
import java.util.List;

/**
 * Messages per second a ROUTER of the library measured takes in from {@value #DEALERS} DEALERs of
 * libzmq, each sending its share of single-frame 64-byte requests as fast as ZeroMQ's queues let it
 * (the shape of the MP server's load: many clients, small requests). The clock runs from the
 * first send to the last message received.
 */
final class RouterRate {
    static final int DEALERS = 4;
    private static final int RECEIVE_MILLIS = 10_000;

    private RouterRate() {
    }

    static double measure(BenchLibrary server, BenchLibrary clients, int messages) throws InterruptedException {
        int each = messages / DEALERS;
        int total = each * DEALERS;
        try (BenchSocket router = server.socket(Kind.ROUTER)) {
            router.linger(0);
            router.receiveTimeout(RECEIVE_MILLIS);
            String endpoint = "tcp://127.0.0.1:" + router.bindLoopback();
            List<BenchSocket> dealers = new ArrayList<>();
            for (int d = 0; d < DEALERS; d++) {
                BenchSocket dealer = clients.socket(Kind.DEALER);
                dealer.linger(0);
                dealer.connect(endpoint);
                dealer.send(new byte[] {(byte) d}, false); // through the handshake before the clock starts
                dealers.add(dealer);
            }
            for (int d = 0; d < DEALERS; d++) {
                receive(router, 1);
            }
            List<Thread> senders = new ArrayList<>();
            byte[] payload = new byte[64];
            long t0 = System.nanoTime();
            for (BenchSocket dealer : dealers) {
                senders.add(Thread.ofPlatform().name("lmcache4j-bench-zmq-dealer").start(() -> {
                    for (int i = 0; i < each; i++) {
                        if (!dealer.send(payload, false)) {
                            throw new IllegalStateException("a DEALER could not queue message " + i);
                        }
                    }
                }));
            }
            receive(router, total);
            long nanos = System.nanoTime() - t0;
            for (Thread t : senders) {
                t.join();
            }
            dealers.forEach(BenchSocket::close);
            return total / (nanos / 1e9);
        }
    }

    private static void receive(BenchSocket router, int messages) {
        for (int i = 0; i < messages; i++) {
            if (router.recv() == null || !router.more() || router.recv() == null) {
                throw new IllegalStateException("the ROUTER received " + i + " of " + messages + " messages in "
                        + RECEIVE_MILLIS + " ms");
            }
        }
    }
}
