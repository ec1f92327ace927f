package lmcache4j.engine;

import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

import lmcache4j.engine.controller.message.ControllerCodec;
import lmcache4j.engine.controller.message.ControllerMessage;
import lmcache4j.engine.controller.message.ErrorMsg;
import lmcache4j.engine.controller.message.HeartbeatCommand;
import lmcache4j.engine.controller.message.MalformedMessageException;
import lmcache4j.engine.controller.message.WorkerReqMsg;
import lmcache4j.engine.controller.message.WorkerReqRetMsg;
import lmcache4j.engine.zmq.OwnedZContext;

/**
 * The smallest controller a worker can talk to, for the worker's tests: a PULL, a ROUTER for
 * requests and a ROUTER for heartbeats on loopback, one thread, every message it receives
 * recorded. It accepts every registration and full sync and answers heartbeats with the commands
 * a test queued. (The real controller lives in the server module and is tested there.)
 */
final class FakeController implements AutoCloseable {
    final int pullPort;
    final int replyPort;
    final int heartbeatPort;
    /** Everything received, on any socket, in arrival order. */
    final List<ControllerMessage> received = new CopyOnWriteArrayList<>();
    final ConcurrentLinkedQueue<HeartbeatCommand> nextHeartbeatCommands = new ConcurrentLinkedQueue<>();
    private final ZContext context = new OwnedZContext("test-fake-controller", 1);
    private final Thread thread;
    private final CountDownLatch bound = new CountDownLatch(1);
    private volatile boolean running = true;
    private final int[] ports = new int[3];

    /** A controller on fresh ports. */
    FakeController() {
        this(0, 0, 0);
    }

    /** A controller on these ports (0: any free one). */
    FakeController(int pull, int reply, int heartbeat) {
        thread = Thread.ofPlatform().name("fake-controller").start(() -> run(pull, reply, heartbeat));
        try {
            bound.await(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            throw new AssertionError(e);
        }
        pullPort = ports[0];
        replyPort = ports[1];
        heartbeatPort = ports[2];
    }

    private static int bind(ZMQ.Socket s, int port) {
        if (port == 0) {
            return s.bindToRandomPort("tcp://127.0.0.1");
        }
        s.bind("tcp://127.0.0.1:" + port);
        return port;
    }

    private void run(int pullPort, int replyPort, int heartbeatPort) {
        ZMQ.Socket pull = context.createSocket(SocketType.PULL);
        ZMQ.Socket reply = context.createSocket(SocketType.ROUTER);
        ZMQ.Socket beat = context.createSocket(SocketType.ROUTER);
        for (ZMQ.Socket s : List.of(pull, reply, beat)) {
            s.setLinger(0);
        }
        ports[0] = bind(pull, pullPort);
        ports[1] = bind(reply, replyPort);
        ports[2] = bind(beat, heartbeatPort);
        bound.countDown();
        try (ZMQ.Poller poller = context.createPoller(3)) {
            poller.register(pull, ZMQ.Poller.POLLIN);
            poller.register(reply, ZMQ.Poller.POLLIN);
            poller.register(beat, ZMQ.Poller.POLLIN);
            while (running) {
                poller.poll(10);
                if (poller.pollin(0)) {
                    do {
                        decode(pull.recv(0)).ifPresent(received::add);
                    } while (pull.hasReceiveMore());
                }
                if (poller.pollin(1)) {
                    serve(reply);
                }
                if (poller.pollin(2)) {
                    serve(beat);
                }
            }
        } finally {
            context.close();
        }
    }

    private void serve(ZMQ.Socket router) {
        byte[] identity = router.recv(0);
        byte[] payload = null;
        while (router.hasReceiveMore()) {
            payload = router.recv(0);
        }
        Optional<ControllerMessage> request = decode(payload);
        request.ifPresent(received::add);
        ControllerMessage answer = switch (request.orElse(null)) {
            case WorkerReqMsg.RegisterMsg r -> new WorkerReqRetMsg.RegisterRetMsg(
                    Map.of(WorkerReqRetMsg.HEARTBEAT_URL, "127.0.0.1:" + ports[2]));
            case WorkerReqMsg.HeartbeatMsg h -> {
                List<HeartbeatCommand> commands = new java.util.ArrayList<>();
                HeartbeatCommand c;
                while ((c = nextHeartbeatCommands.poll()) != null) {
                    commands.add(c);
                }
                yield new WorkerReqRetMsg.HeartbeatRetMsg(commands);
            }
            case WorkerReqMsg.FullSyncStartMsg s -> new WorkerReqRetMsg.FullSyncStartRetMsg(s.syncId(), true, Optional.empty());
            case WorkerReqMsg.FullSyncStatusMsg s -> new WorkerReqRetMsg.FullSyncStatusRetMsg(s.syncId(), true, 1.0, true,
                    new long[0]);
            case null, default -> new ErrorMsg("not served by the fake controller");
        };
        router.sendMore(identity);
        router.sendMore(new byte[0]);
        router.send(ControllerCodec.encode(answer));
    }

    private static Optional<ControllerMessage> decode(byte[] frame) {
        if (frame == null || frame.length == 0) {
            return Optional.empty();
        }
        try {
            return Optional.of(ControllerCodec.decode(frame));
        } catch (MalformedMessageException e) {
            throw new AssertionError("the worker sent a frame the codec refuses: " + e.getMessage(), e);
        }
    }

    /** The messages of type {@code type} received so far. */
    <T> List<T> receivedOf(Class<T> type) {
        return received.stream().filter(type::isInstance).map(type::cast).toList();
    }

    @Override
    public void close() throws InterruptedException {
        running = false;
        thread.join(10_000);
    }
}
