package lmcache4j.bench.zmq;

import java.util.Arrays;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * KV events reaching a subscriber that joins late, while the publisher is busy: a PUB of the library
 * measured publishes {@value #EVENT_BYTES}-byte events on its own thread as fast as it can (as an
 * engine storing hard does), and subscribers of libzmq (the library vLLM's subscribers and
 * NVIDIA Dynamo's router run on) connect one after another and listen for {@value #WINDOW_MILLIS} ms.
 * Measured: the time from {@code connect} to the first event, and the events each subscriber
 * received per second of its window (what a subscriber keeps up with while the publisher works
 * flat out; ZeroMQ drops the rest at the publisher's high-water mark).
 */
public final class LateSubscribers {
    static final int EVENT_BYTES = 256;
    static final int WINDOW_MILLIS = 300;

    public record Figures(double firstEventP50Millis, double firstEventWorstMillis, double receivedPerSecond) {
    }

    private LateSubscribers() {
    }

    static Figures measure(BenchLibrary publisherLibrary, BenchLibrary subscriberLibrary, int subscribers)
            throws InterruptedException {
        AtomicBoolean running = new AtomicBoolean(true);
        try (BenchSocket pub = publisherLibrary.socket(Kind.PUB)) {
            pub.linger(0);
            String endpoint = "tcp://127.0.0.1:" + pub.bindLoopback();
            Thread publisher = Thread.ofPlatform().name("lmcache4j-bench-zmq-publisher").start(() -> {
                byte[] event = new byte[EVENT_BYTES];
                while (running.get()) {
                    pub.send(event, false);
                }
            });
            double[] firstMillis = new double[subscribers];
            long received = 0;
            try {
                for (int i = 0; i < subscribers; i++) {
                    try (BenchSocket sub = subscriberLibrary.socket(Kind.SUB)) {
                        sub.linger(0);
                        sub.subscribeAll();
                        sub.receiveTimeout(10);
                        long t0 = System.nanoTime();
                        long end = t0 + WINDOW_MILLIS * 1_000_000L;
                        sub.connect(endpoint);
                        firstMillis[i] = Double.NaN;
                        while (System.nanoTime() - end < 0) {
                            if (sub.recv() == null) {
                                continue;
                            }
                            if (Double.isNaN(firstMillis[i])) {
                                firstMillis[i] = (System.nanoTime() - t0) / 1e6;
                            }
                            received++;
                        }
                        if (Double.isNaN(firstMillis[i])) {
                            firstMillis[i] = WINDOW_MILLIS; // heard nothing: at least the whole window
                        }
                    }
                }
            } finally {
                running.set(false);
                publisher.join();
            }
            Arrays.sort(firstMillis);
            return new Figures(Stats.percentile(firstMillis, 0.5), firstMillis[subscribers - 1],
                    received / (subscribers * WINDOW_MILLIS / 1e3));
        }
    }
}
