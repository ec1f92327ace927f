package lmcache4j.server.controller;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;

import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

import lmcache4j.engine.zmq.OwnedZContext;
import lmcache4j.engine.controller.message.ControlMsg;
import lmcache4j.engine.controller.message.ControlRetMsg;
import lmcache4j.engine.controller.message.ControllerCodec;
import lmcache4j.engine.controller.message.ControllerMessage;
import lmcache4j.engine.controller.message.KVOpEvent;
import lmcache4j.engine.controller.message.OpType;
import lmcache4j.engine.controller.message.WorkerMsg;
import lmcache4j.engine.controller.message.WorkerReqMsg;
import lmcache4j.engine.controller.message.WorkerReqRetMsg;

/**
 * A worker written against the wire alone, as LMCache's worker talks to a controller: DEALER to
 * the reply and heartbeat ROUTERs, PUSH to the PULL socket, and a REP socket of its own answering
 * control messages with {@code answer} (or never, to test timeouts). Encodes and decodes with
 * the engine's codec.
 */
final class FakeWorker implements AutoCloseable {
    final String instanceId;
    final int workerId;
    final ZContext context = new OwnedZContext("test-fake-worker", 1);
    private final ZContext repContext = new OwnedZContext("test-fake-worker-rep", 1);
    final ZMQ.Socket push;
    final ZMQ.Socket dealer;
    final ZMQ.Socket heartbeatDealer;
    final ZMQ.Socket rep;
    final int repPort;
    final List<ControlMsg> controlReceived = new CopyOnWriteArrayList<>();
    private final AtomicBoolean running = new AtomicBoolean(true);
    private final Thread repThread;
    volatile Function<ControlMsg, Optional<ControlRetMsg>> answer = m -> Optional.of(defaultAnswer(m));

    FakeWorker(ControllerServer controller, String instanceId, int workerId) {
        this.instanceId = instanceId;
        this.workerId = workerId;
        push = context.createSocket(SocketType.PUSH);
        push.setLinger(1000);
        push.connect(controller.pullEndpoint().connectAddress());
        dealer = dealer(controller.replyEndpoint());
        heartbeatDealer = dealer(controller.advertisedHeartbeat());
        rep = repContext.createSocket(SocketType.REP);
        rep.setLinger(0);
        rep.setReceiveTimeOut(50);
        // A port the kernel picks: JeroMQ's bindToRandomPort guesses one in 49152-65535, which can be a
        // port another socket of this machine already uses, and a connection to it then goes astray.
        rep.bind("tcp://127.0.0.1:*");
        repPort = Endpoint.parse(rep.getLastEndpoint()).port();
        repThread = Thread.ofPlatform().daemon().name("fake-worker-rep").start(this::serveControl);
    }

    private ZMQ.Socket dealer(Endpoint at) {
        ZMQ.Socket s = context.createSocket(SocketType.DEALER);
        s.setLinger(0);
        s.setReceiveTimeOut(30_000); // generous: a loaded 2-core CI machine slows round trips 20-fold
        s.connect(at.connectAddress());
        return s;
    }

    String repThreadState() {
        return repThread.getState() + (repFailure == null ? "" : " after " + repFailure);
    }

    private volatile Throwable repFailure;
    final java.util.concurrent.atomic.AtomicInteger repFrames = new java.util.concurrent.atomic.AtomicInteger();

    static ControlRetMsg defaultAnswer(ControlMsg m) {
        return switch (m) {
            case ControlMsg.ClearWorkerMsg c -> new ControlRetMsg.ClearWorkerRetMsg(42);
            case ControlMsg.PinWorkerMsg p -> new ControlRetMsg.PinWorkerRetMsg(p.tokens().length);
            case ControlMsg.MoveWorkerMsg mv -> new ControlRetMsg.MoveWorkerRetMsg(256);
            case ControlMsg.CompressWorkerMsg c -> new ControlRetMsg.CompressWorkerRetMsg(128);
            case ControlMsg.DecompressWorkerMsg d -> new ControlRetMsg.DecompressWorkerRetMsg(64);
            case ControlMsg.HealthWorkerMsg h -> new ControlRetMsg.HealthWorkerRetMsg(0);
            case ControlMsg.CheckFinishWorkerMsg c -> new ControlRetMsg.CheckFinishWorkerRetMsg("finished");
            default -> new lmcache4j.engine.controller.message.ErrorMsg("not supported");
        };
    }

    private void serveControl() {
        while (running.get()) {
            byte[] request;
            try {
                request = rep.recv(0);
            } catch (RuntimeException e) {
                repFailure = e;
                return;
            }
            if (request == null) {
                continue;
            }
            repFrames.incrementAndGet();
            try {
                ControlMsg m = (ControlMsg) ControllerCodec.decode(request);
                controlReceived.add(m);
                Optional<ControlRetMsg> reply = answer.apply(m);
                if (reply.isEmpty()) {
                    // Never answer: the REP socket is stuck now; rebuild it the way a restarted worker would.
                    return;
                }
                rep.send(ControllerCodec.encode(reply.get()), 0);
            } catch (Exception e) {
                rep.send(ControllerCodec.encode(new lmcache4j.engine.controller.message.ErrorMsg(e.toString())), 0);
            }
        }
    }

    /** Sends a request on a DEALER ([empty, payload]) and returns the decoded answer. */
    ControllerMessage ask(ZMQ.Socket s, ControllerMessage request) throws Exception {
        s.send(new byte[0], ZMQ.SNDMORE);
        s.send(ControllerCodec.encode(request), 0);
        byte[] empty = s.recv(0);
        if (empty == null) {
            throw new AssertionError("no answer to " + request);
        }
        return ControllerCodec.decode(s.recv(0));
    }

    WorkerReqRetMsg.RegisterRetMsg register() throws Exception {
        return register(Optional.empty());
    }

    WorkerReqRetMsg.RegisterRetMsg register(Optional<String> peerInitUrl) throws Exception {
        return (WorkerReqRetMsg.RegisterRetMsg) ask(dealer, new WorkerReqMsg.RegisterMsg(instanceId, workerId, "127.0.0.1",
                repPort, peerInitUrl));
    }

    WorkerReqRetMsg.HeartbeatRetMsg heartbeat() throws Exception {
        return (WorkerReqRetMsg.HeartbeatRetMsg) ask(heartbeatDealer, new WorkerReqMsg.HeartbeatMsg(instanceId, workerId,
                "127.0.0.1", repPort, Optional.empty()));
    }

    /** Pushes one multipart message, one encoded frame per message. */
    void push(WorkerMsg... messages) {
        for (int i = 0; i < messages.length; i++) {
            push.send(ControllerCodec.encode(messages[i]), i < messages.length - 1 ? ZMQ.SNDMORE : 0);
        }
    }

    WorkerMsg.BatchedKVOperationMsg admits(String location, long... keys) {
        List<KVOpEvent> ops = new ArrayList<>();
        for (long k : keys) {
            ops.add(new KVOpEvent(OpType.ADMIT, k, ops.size()));
        }
        return new WorkerMsg.BatchedKVOperationMsg(instanceId, workerId, location, ops);
    }

    WorkerMsg.BatchedKVOperationMsg evicts(String location, long... keys) {
        List<KVOpEvent> ops = new ArrayList<>();
        for (long k : keys) {
            ops.add(new KVOpEvent(OpType.EVICT, k, ops.size()));
        }
        return new WorkerMsg.BatchedKVOperationMsg(instanceId, workerId, location, ops);
    }

    @Override
    public void close() throws InterruptedException {
        running.set(false);
        repThread.join(2000);
        repContext.close();
        context.close();
    }
}
