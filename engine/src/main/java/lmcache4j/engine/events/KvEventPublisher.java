package lmcache4j.engine.events;

import java.lang.System.Logger.Level;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;
import org.zeromq.ZMQException;

import lmcache4j.allocator.internal.threads.OwnedThreads;
import lmcache4j.engine.zmq.OwnedZContext;

/**
 * vLLM's {@code ZmqEventPublisher}, wire for wire: a publishing socket sends each batch as the frames
 * {@code [topic, seq as 8 bytes big-endian, payload]} (seq from 0), and an optional ROUTER answers
 * a replay request {@code [start seq as 8 bytes]} with every buffered batch from that seq, each as
 * {@code [seq, payload]}, then {@code [-1 as 8 bytes, empty]}. One thread
 * ({@code lmcache4j-kv-events}) owns the sockets: it drains the queue into batches of at most
 * {@value #MAX_BATCH} events every {@value #BATCH_MILLIS} ms and serves replays between them.
 * The queue is bounded; events beyond it are dropped and counted, never waited for.
 *
 * <p>One difference: the socket is an XPUB (the same messages to subscribers as a PUB), so the
 * publisher sees subscriptions arrive. A PUB drops what it sends before the first subscription
 * reaches it, which loses an engine's first events whenever it starts publishing within the
 * connection's handshake; this one holds its first batches until a subscriber is there, for at
 * most {@value #FIRST_SUBSCRIBER_WAIT_MILLIS} ms.
 */
final class KvEventPublisher implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(KvEventPublisher.class.getName());
    static final int MAX_BATCH = 1024;
    static final int BATCH_MILLIS = 10;
    static final byte[] END_SEQ = {-1, -1, -1, -1, -1, -1, -1, -1};
    /**
     * How long the first batches wait for a subscriber: a subscriber that connects as the engine
     * starts is there within milliseconds on loopback, and a connection JeroMQ 0.6.0 loses track of
     * is watched again within half a second ({@code PollerRepair}; it had waited for a handshake
     * timer of seconds before, for which this wait was 10 s).
     */
    static final long FIRST_SUBSCRIBER_WAIT_MILLIS = 2_000;
    /** The largest frame a subscriber or replay client may send; a longer one disconnects it. */
    static final long MAX_REQUEST_BYTES = 64 * 1024;
    /** How long closing waits for sent batches to leave (ZeroMQ drops them at once with linger 0). */
    static final int LINGER_MILLIS = 1_000;
    private static final Duration JOIN_BOUND = Duration.ofMillis(FIRST_SUBSCRIBER_WAIT_MILLIS + 2_000);

    private final KvEventsSettings settings;
    private final ZContext context = new OwnedZContext("kv-events", 1);
    private final ZMQ.Socket pub;
    private final ZMQ.Socket replay;
    private final byte[] topic;
    private final BlockingQueue<KvEvent> queue;
    private final ArrayDeque<Batch> buffer = new ArrayDeque<>();
    private final AtomicLong dropped = new AtomicLong();
    private final AtomicLong published = new AtomicLong();
    private final OwnedThreads threads = new OwnedThreads();
    private final Thread thread;
    private volatile boolean running = true;
    private long nextSeq;
    private boolean subscribed;
    private long holdUntilNanos;

    private record Batch(long seq, byte[] payload) {
    }

    KvEventPublisher(KvEventsSettings settings) {
        this.settings = Objects.requireNonNull(settings, "settings");
        this.topic = settings.topic().getBytes(StandardCharsets.UTF_8);
        this.queue = new ArrayBlockingQueue<>(settings.maxQueueSize());
        context.setLinger(LINGER_MILLIS); // ZContext gives every socket its own linger on close
        try {
            pub = context.createSocket(SocketType.XPUB);
            pub.setMaxMsgSize(MAX_REQUEST_BYTES); // what comes in is subscriptions
            pub.setSndHWM(settings.hwm());
            if (binds(settings.endpoint())) {
                pub.bind(settings.endpoint());
            } else {
                pub.connect(settings.endpoint());
            }
            if (settings.replayEndpoint().isPresent()) {
                replay = context.createSocket(SocketType.ROUTER);
                replay.setMaxMsgSize(MAX_REQUEST_BYTES); // and replay requests of 8 bytes
                replay.bind(settings.replayEndpoint().get());
            } else {
                replay = null;
            }
        } catch (ZMQException | IllegalArgumentException e) {
            context.close();
            throw new IllegalArgumentException("KV events: cannot open " + settings.endpoint()
                    + settings.replayEndpoint().map(r -> " / replay " + r).orElse("") + ": " + reason(e, settings.endpoint()), e);
        }
        thread = threads.start("kv-events", this::run);
    }

    /** ZeroMQ's errno by name; for a taken ipc:// name, why a name can be taken at all. */
    static String reason(RuntimeException e, String endpoint) {
        if (!(e instanceof ZMQException z)) {
            return e.getMessage();
        }
        int code = z.getErrorCode();
        if (code == ZMQ.Error.EADDRINUSE.getCode()) {
            return "address already in use" + (endpoint.startsWith("ipc://")
                    ? " (JeroMQ serves ipc:// on a loopback TCP port derived from the name, and another socket holds"
                            + " that port: choose another name or a tcp:// address)"
                    : "");
        }
        for (ZMQ.Error error : ZMQ.Error.values()) {
            if (error.getCode() == code) {
                return error.name() + ": " + error.getMessage();
            }
        }
        return z.getMessage();
    }

    /** vLLM's rule: bind a wildcard, IPv6-any, ipc:// or inproc:// address; connect to anything else. */
    static boolean binds(String endpoint) {
        return endpoint.contains("*") || endpoint.contains("::") || endpoint.startsWith("ipc://")
                || endpoint.startsWith("inproc://");
    }

    /** Queues {@code event}; false (and counted) when the queue is full or the publisher closed. */
    boolean offer(KvEvent event) {
        if (!running) {
            dropped.incrementAndGet(); // the tiers' last evictions while the engine closes: expected, only counted
            return false;
        }
        if (!queue.offer(event)) {
            if (dropped.getAndIncrement() == 0) {
                LOG.log(Level.WARNING, "KV events: the queue of " + settings.maxQueueSize()
                        + " events is full; events are dropped and counted");
            }
            return false;
        }
        return true;
    }

    long dropped() {
        return dropped.get();
    }

    long publishedBatches() {
        return published.get();
    }

    private void run() {
        List<KvEvent> batch = new ArrayList<>(MAX_BATCH);
        try {
            while (running || !queue.isEmpty()) {
                serveReplay();
                if (holding()) {
                    Thread.sleep(BATCH_MILLIS);
                    continue;
                }
                KvEvent first = queue.poll(BATCH_MILLIS, TimeUnit.MILLISECONDS);
                if (first == null) {
                    continue;
                }
                batch.add(first);
                queue.drainTo(batch, MAX_BATCH - 1);
                publish(batch);
                batch.clear();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (RuntimeException e) {
            LOG.log(Level.ERROR, "KV events: the publisher thread stopped: " + e, e);
        }
    }

    /**
     * Whether the first batches wait for a subscriber: until one subscribes (the XPUB reads the
     * subscription), for at most {@link #FIRST_SUBSCRIBER_WAIT_MILLIS} from the first queued event,
     * a close included (an engine that stores a little and closes would otherwise publish to nobody).
     */
    private boolean holding() {
        while (pub.recv(ZMQ.DONTWAIT) != null) {
            subscribed = true; // a subscription (or its cancel): someone is there
        }
        if (subscribed || queue.isEmpty()) {
            return false;
        }
        long now = System.nanoTime();
        if (holdUntilNanos == 0) {
            holdUntilNanos = now + TimeUnit.MILLISECONDS.toNanos(FIRST_SUBSCRIBER_WAIT_MILLIS);
        }
        if (now - holdUntilNanos >= 0) {
            subscribed = true; // nobody came: publish as a PUB would (what nobody hears is lost)
            LOG.log(Level.WARNING, "KV events: no subscriber on " + settings.endpoint() + " within "
                    + FIRST_SUBSCRIBER_WAIT_MILLIS / 1000 + " s; publishing anyway (a router that comes later can "
                    + "replay what it missed" + (replay == null ? ", once kv_events_replay_endpoint is set)" : ")"));
            return false;
        }
        return true;
    }

    private void publish(List<KvEvent> events) {
        byte[] payload = KvEventCodec.batch(System.currentTimeMillis() / 1000.0, events);
        long seq = nextSeq++;
        pub.sendMore(topic);
        pub.sendMore(seqBytes(seq));
        pub.send(payload);
        buffer.addLast(new Batch(seq, payload));
        if (buffer.size() > settings.bufferSteps()) {
            buffer.removeFirst();
        }
        published.incrementAndGet();
    }

    /** Answers every waiting replay request (frames: identity, empty, start seq). */
    private void serveReplay() {
        if (replay == null) {
            return;
        }
        byte[] identity;
        while ((identity = replay.recv(ZMQ.DONTWAIT)) != null) {
            List<byte[]> rest = new ArrayList<>();
            while (replay.hasReceiveMore() && rest.size() < 4) {
                rest.add(replay.recv(0));
            }
            while (replay.hasReceiveMore()) {
                replay.recv(0); // an over-long request: its extra frames are dropped
            }
            if (rest.size() != 2 || rest.get(1).length != 8) {
                LOG.log(Level.DEBUG, "KV events: an invalid replay request of " + (rest.size() + 1) + " frames");
                continue;
            }
            long start = ByteBuffer.wrap(rest.get(1)).getLong();
            for (Batch b : buffer) {
                if (b.seq() >= start) {
                    send(identity, seqBytes(b.seq()), b.payload());
                }
            }
            send(identity, END_SEQ, new byte[0]);
        }
    }

    private void send(byte[] identity, byte[] seq, byte[] payload) {
        replay.sendMore(identity);
        replay.sendMore(new byte[0]);
        replay.sendMore(seq);
        replay.send(payload);
    }

    static byte[] seqBytes(long seq) {
        return ByteBuffer.allocate(8).putLong(seq).array();
    }

    /**
     * Publishes what is queued (waiting out the first-subscriber hold if it is on), then closes the
     * sockets, giving sent batches {@value #LINGER_MILLIS} ms to leave.
     */
    @Override
    public void close() {
        running = false;
        if (!threads.join(JOIN_BOUND)) {
            thread.interrupt(); // stuck past the first-subscriber hold: give up what is queued
            threads.join(JOIN_BOUND);
        }
        context.close();
    }
}
