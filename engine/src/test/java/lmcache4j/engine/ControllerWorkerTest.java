package lmcache4j.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.net.ServerSocket;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.BooleanSupplier;
import java.util.stream.Collectors;

import org.junit.jupiter.api.Test;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

import lmcache4j.engine.config.ConfigLoader;
import lmcache4j.engine.config.LMCacheEngineConfig;
import lmcache4j.engine.connector.KvConnector;
import lmcache4j.engine.connector.PagedKvCache;
import lmcache4j.engine.controller.ControllerKeys;
import lmcache4j.engine.controller.ControllerWorker;
import lmcache4j.engine.controller.message.ControlMsg;
import lmcache4j.engine.controller.message.ControlRetMsg;
import lmcache4j.engine.controller.message.ControllerCodec;
import lmcache4j.engine.controller.message.ControllerMessage;
import lmcache4j.engine.controller.message.ErrorMsg;
import lmcache4j.engine.controller.message.HeartbeatCommand;
import lmcache4j.engine.controller.message.KVOpEvent;
import lmcache4j.engine.controller.message.OpType;
import lmcache4j.engine.controller.message.Position;
import lmcache4j.engine.controller.message.WorkerMsg;
import lmcache4j.engine.controller.message.WorkerReqMsg;
import lmcache4j.engine.key.ChunkHasher;
import lmcache4j.engine.key.ChunkRange;
import lmcache4j.engine.key.HashAlgorithm;
import lmcache4j.engine.storage.cpu.LocalCpuBackend;
import lmcache4j.engine.storage.disk.LocalDiskBackend;
import lmcache4j.engine.zmq.OwnedZContext;

/**
 * The engine's controller worker against a real (tiny, in-test) ZeroMQ controller: registration,
 * admits and evicts with their keys, locations and sequence numbers, control messages on the
 * worker's REP socket, an absent controller, queue overflow followed by a full sync, and a close
 * that deregisters and leaves no thread behind.
 */
class ControllerWorkerTest {
    private static final int CHUNK = 64;
    private static final int BLOCKS = 64;
    private static final String CPU = LocalCpuBackend.NAME;

    private static LMCacheEngine engine(int pullPort, int replyPort, int queueSize) {
        double gb = 32 * SyntheticKv.model().chunkBytes(CHUNK) / (double) (1L << 30);
        LMCacheEngineConfig config = ConfigLoader.builder().environment(Map.of())
                .set("chunk_size", CHUNK).set("max_local_cpu_size", gb).set("hash_seed", "0")
                .set("enable_controller", true).set("lmcache_instance_id", "test-instance")
                .set("controller_url", "127.0.0.1:" + pullPort).set("controller_reply_url", "127.0.0.1:" + replyPort)
                .set("lmcache_worker_heartbeat_delay_time", 0.05).set("lmcache_worker_heartbeat_time", 0.1)
                .set("controller_report_queue_size", queueSize).build();
        return LMCacheEngine.create(config, SyntheticKv.model(), KvConnector.host(), List.of());
    }

    private static int store(LMCacheEngine engine, Arena arena, int tokens, long seed) {
        PagedKvCache kv = SyntheticKv.cache(arena, BLOCKS);
        int[] t = SyntheticKv.tokens(tokens, seed);
        long[] slots = SyntheticKv.slots(tokens, BLOCKS, seed);
        SyntheticKv.compute(kv, t, slots, 0, tokens);
        return engine.store(t, null, kv, slots, Map.of());
    }

    private static long[] controllerKeys(LMCacheEngine engine, int tokens, long seed) {
        int[] t = SyntheticKv.tokens(tokens, seed);
        return ControllerKeys.of(ControllerKeys.Scheme.LMCACHE, ChunkHasher.seeded(HashAlgorithm.SHA256_CBOR, "0"), t,
                engine.prepare(t, Map.of()).chunks());
    }

    private static void await(String what, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + 20_000_000_000L;
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out waiting for " + what);
            }
            Thread.sleep(10);
        }
    }

    private static List<KVOpEvent> ops(FakeController c, String location) {
        return c.receivedOf(WorkerMsg.BatchedKVOperationMsg.class).stream().filter(b -> b.location().equals(location))
                .flatMap(b -> b.operations().stream()).toList();
    }

    private static Set<Long> syncedKeys(FakeController c, String location) {
        return c.receivedOf(WorkerMsg.FullSyncBatchMsg.class).stream().filter(b -> b.location().equals(location))
                .flatMapToLong(b -> Arrays.stream(b.keys())).boxed().collect(Collectors.toSet());
    }

    private static Set<String> threadNames() {
        return Thread.getAllStackTraces().keySet().stream().filter(Thread::isAlive).map(Thread::getName)
                .collect(Collectors.toSet());
    }

    @Test
    void admitsAndEvictsArriveWithTheirKeysLocationAndSequenceNumbers() throws Exception {
        try (FakeController controller = new FakeController(); Arena arena = Arena.ofConfined();
             LMCacheEngine engine = engine(controller.pullPort, controller.replyPort, 1024)) {
            ControllerWorker worker = engine.controllerWorker().orElseThrow();
            await("registration", worker::registered);
            WorkerReqMsg.RegisterMsg reg = controller.receivedOf(WorkerReqMsg.RegisterMsg.class).getFirst();
            assertEquals("test-instance", reg.instanceId());
            assertEquals(worker.controlPort(), reg.port());
            await("the post-registration sync", () -> controller.receivedOf(WorkerMsg.FullSyncEndMsg.class).size() >= 1);

            assertEquals(192, store(engine, arena, 200, 7));
            long[] keys = Arrays.copyOf(controllerKeys(engine, 200, 7), 3);
            await("three admits", () -> ops(controller, CPU).size() >= 3);
            List<KVOpEvent> admits = ops(controller, CPU);
            for (int i = 0; i < 3; i++) {
                assertEquals(new KVOpEvent(OpType.ADMIT, keys[i], i), admits.get(i));
            }
            engine.clear();
            await("three evicts", () -> ops(controller, CPU).size() >= 6);
            List<KVOpEvent> all = ops(controller, CPU);
            Set<Long> evicted = new HashSet<>();
            for (int i = 3; i < 6; i++) {
                assertEquals(OpType.EVICT, all.get(i).opType());
                assertEquals(i, all.get(i).seqNum(), "sequence numbers keep counting per location");
                evicted.add(all.get(i).key());
            }
            assertEquals(Set.of(keys[0], keys[1], keys[2]), evicted);
            await("heartbeats", () -> controller.receivedOf(WorkerReqMsg.HeartbeatMsg.class).size() >= 2);
            assertEquals(6L, worker.counters().get("lmcache:controller_ops_reported"));
            assertTrue(engine.metrics().toPrometheus().contains("lmcache:controller_ops_reported"));
        }
    }

    @Test
    void aFullSyncCommandInAHeartbeatReplySendsEveryKeyHeld() throws Exception {
        try (FakeController controller = new FakeController(); Arena arena = Arena.ofConfined();
             LMCacheEngine engine = engine(controller.pullPort, controller.replyPort, 1024)) {
            await("registration", () -> engine.controllerWorker().orElseThrow().registered());
            // The sync that follows registration must be over first: its end would otherwise pass for the one asked below.
            await("the post-registration sync", () -> controller.receivedOf(WorkerMsg.FullSyncEndMsg.class).size() >= 1);
            store(engine, arena, 256, 11);
            long[] keys = controllerKeys(engine, 256, 11);
            int endsBefore = controller.receivedOf(WorkerMsg.FullSyncEndMsg.class).size();
            controller.nextHeartbeatCommands.add(HeartbeatCommand.FullSyncCommand.because("worker_re_registered"));
            await("a full sync", () -> controller.receivedOf(WorkerMsg.FullSyncEndMsg.class).size() > endsBefore);
            assertEquals(Arrays.stream(keys).boxed().collect(Collectors.toSet()), syncedKeys(controller, CPU));
            WorkerMsg.FullSyncEndMsg end = controller.receivedOf(WorkerMsg.FullSyncEndMsg.class).getLast();
            assertEquals(4, end.actualTotalKeys());
        }
    }

    @Test
    void theControlSocketAnswersClearPinHealthMoveAndCheckFinishAndSurvivesGarbage() throws Exception {
        try (FakeController controller = new FakeController(); Arena arena = Arena.ofConfined();
             LMCacheEngine engine = engine(controller.pullPort, controller.replyPort, 1024);
             ZContext zmq = new OwnedZContext("test-controller-worker", 1)) {
            ControllerWorker worker = engine.controllerWorker().orElseThrow();
            ZMQ.Socket req = zmq.createSocket(SocketType.REQ);
            req.setLinger(0);
            req.setReceiveTimeOut(10_000);
            req.connect("tcp://" + worker.controlIp() + ":" + worker.controlPort());
            store(engine, arena, 256, 5);
            int[] tokens = SyntheticKv.tokens(256, 5);

            assertEquals(new ControlRetMsg.HealthWorkerRetMsg(0), ask(req, new ControlMsg.HealthWorkerMsg("h1")));
            assertEquals(new ControlRetMsg.PinWorkerRetMsg(256), ask(req, new ControlMsg.PinWorkerMsg("p1", CPU, tokens)));
            assertEquals(new ControlRetMsg.ClearWorkerRetMsg(0), ask(req, new ControlMsg.ClearWorkerMsg("c1", CPU)),
                    "pinned chunks are not evictable");
            assertInstanceOf(ErrorMsg.class, ask(req, new ControlMsg.ClearWorkerMsg("c2", "NoSuchBackend")));

            ControllerMessage move = ask(req, new ControlMsg.MoveWorkerMsg("m1", LocalDiskBackend.NAME,
                    new Position("127.0.0.1:0", CPU), Optional.of(tokens), Optional.of(true)));
            assertEquals(new ControlRetMsg.MoveWorkerRetMsg(256), move);
            await("the move to finish", () -> ask(req, new ControlMsg.CheckFinishWorkerMsg("m1"))
                    .equals(new ControlRetMsg.CheckFinishWorkerRetMsg("finished")));
            assertEquals(new ControlRetMsg.CheckFinishWorkerRetMsg("unknown_event"),
                    ask(req, new ControlMsg.CheckFinishWorkerMsg("never")));
            assertInstanceOf(ErrorMsg.class, ask(req, new ControlMsg.MoveWorkerMsg("m2", CPU,
                    new Position("x", LocalDiskBackend.NAME), Optional.empty(), Optional.empty())));
            assertInstanceOf(ErrorMsg.class, ask(req, new ControlMsg.CompressWorkerMsg("z", "zstd", CPU, Optional.empty())));
            assertInstanceOf(ErrorMsg.class, ask(req, new WorkerReqMsg.FullSyncStatusMsg("i", 0, "s")));

            req.send(new byte[] {(byte) 0xc1, 1, 2});
            assertInstanceOf(ErrorMsg.class, ControllerCodec.decode(req.recv(0)));
            req.send(new byte[] {(byte) 0x81, (byte) 0xa4, 't', 'y', 'p', 'e', (byte) 0xa3, 'N', 'e', 'w'}); // {"type": "New"}
            assertInstanceOf(ErrorMsg.class, ControllerCodec.decode(req.recv(0)));
            assertEquals(new ControlRetMsg.HealthWorkerRetMsg(0), ask(req, new ControlMsg.HealthWorkerMsg("h2")),
                    "still serving after garbage");
            assertEquals(1L, worker.counters().get("lmcache:controller_control_malformed"));
            assertEquals(1L, worker.counters().get("lmcache:controller_control_unknown_type"));
            for (ChunkRange r : engine.prepare(tokens, Map.of()).chunks()) {
                engine.storage().cpu().unpin(r.key()); // the pins the control message took
            }
        }
    }

    /**
     * A peer that completes ZeroMQ's handshake as a REQ and then declares a message over the limit
     * is disconnected before ZeroMQ reserves that memory (without the limit, JeroMQ reserves what
     * the header declares and waits for it: 64 MiB here, 1.5 GiB killed the I/O thread); the
     * control socket goes on answering.
     */
    @Test
    void aDeclaredHugeMessageDisconnectsItsSenderAndTheControlSocketStillAnswers() throws Exception {
        try (FakeController controller = new FakeController();
             LMCacheEngine engine = engine(controller.pullPort, controller.replyPort, 1024);
             ZContext zmq = new OwnedZContext("test-controller-worker", 1)) {
            ControllerWorker worker = engine.controllerWorker().orElseThrow();
            try (java.net.Socket raw = new java.net.Socket(worker.controlIp(), worker.controlPort())) {
                raw.setSoTimeout(10_000);
                java.io.OutputStream out = raw.getOutputStream();
                byte[] greeting = new byte[64]; // ZMTP 3.0: signature, version 3.0, NULL mechanism, as-server 0
                greeting[0] = (byte) 0xff;
                greeting[8] = 1;
                greeting[9] = 0x7f;
                greeting[10] = 3;
                System.arraycopy("NULL".getBytes(java.nio.charset.StandardCharsets.US_ASCII), 0, greeting, 12, 4);
                out.write(greeting);
                out.flush();
                java.io.InputStream in = raw.getInputStream();
                in.readNBytes(64); // the worker's greeting: JeroMQ takes the rest only after it has sent that
                java.io.ByteArrayOutputStream ready = new java.io.ByteArrayOutputStream();
                ready.write(5);
                ready.writeBytes("READY".getBytes(java.nio.charset.StandardCharsets.US_ASCII));
                ready.write(11);
                ready.writeBytes("Socket-Type".getBytes(java.nio.charset.StandardCharsets.US_ASCII));
                ready.writeBytes(new byte[] {0, 0, 0, 3});
                ready.writeBytes("REQ".getBytes(java.nio.charset.StandardCharsets.US_ASCII));
                ready.write(8);
                ready.writeBytes("Identity".getBytes(java.nio.charset.StandardCharsets.US_ASCII));
                ready.writeBytes(new byte[] {0, 0, 0, 0});
                out.write(new byte[] {0x04, (byte) ready.size()});
                out.write(ready.toByteArray());
                out.write(new byte[] {0x01, 0x00}); // REQ's empty delimiter frame, more to come
                long declared = ControllerWorker.MAX_MESSAGE_BYTES * 4;
                out.write(java.nio.ByteBuffer.allocate(9).put((byte) 0x02).putLong(declared).array()); // long, last
                out.flush();
                try {
                    while (in.read(new byte[256]) >= 0) {
                        // the worker's READY, then the end of the connection
                    }
                } catch (java.net.SocketTimeoutException e) {
                    throw new AssertionError("the sender of an over-long message is still connected after 10 s", e);
                }
            }
            ZMQ.Socket req = zmq.createSocket(SocketType.REQ);
            req.setLinger(0);
            req.setReceiveTimeOut(10_000);
            req.connect("tcp://" + worker.controlIp() + ":" + worker.controlPort());
            assertEquals(new ControlRetMsg.HealthWorkerRetMsg(0), ask(req, new ControlMsg.HealthWorkerMsg("h")));
        }
    }

    private static ControllerMessage ask(ZMQ.Socket req, ControllerMessage request) {
        req.send(ControllerCodec.encode(request));
        byte[] reply = req.recv(0);
        assertTrue(reply != null, "a reply to " + request);
        try {
            return ControllerCodec.decode(reply);
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }

    private static int freePort() throws Exception {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    @Test
    void anAbsentControllerFailsNothingAndAControllerThatComesLaterGetsAFullSync() throws Exception {
        int pull = freePort();
        int reply = freePort();
        try (Arena arena = Arena.ofConfined(); LMCacheEngine engine = engine(pull, reply, 4)) {
            ControllerWorker worker = engine.controllerWorker().orElseThrow();
            for (int i = 0; i < 8; i++) {
                assertEquals(192, store(engine, arena, 200, 100 + i), "stores succeed with no controller");
            }
            assertEquals(192, engine.lookup(SyntheticKv.tokens(200, 100), Map.of(), null));
            assertTrue(!worker.registered());
            try (FakeController controller = new FakeController(pull, reply, 0)) {
                await("registration once the controller is up", worker::registered);
                await("the full sync", () -> syncedKeys(controller, CPU).size() >= 8 * 3);
                Set<Long> expected = new HashSet<>();
                for (int i = 0; i < 8; i++) {
                    Arrays.stream(Arrays.copyOf(controllerKeys(engine, 200, 100 + i), 3)).forEach(expected::add);
                }
                assertEquals(expected, syncedKeys(controller, CPU));
            }
        }
    }

    @Test
    void aFullQueueDropsCountsAndResyncs() throws Exception {
        try (FakeController controller = new FakeController(); Arena arena = Arena.ofConfined();
             LMCacheEngine engine = engine(controller.pullPort, controller.replyPort, 2)) {
            ControllerWorker worker = engine.controllerWorker().orElseThrow();
            await("registration", worker::registered);
            await("the post-registration sync", () -> controller.receivedOf(WorkerMsg.FullSyncEndMsg.class).size() >= 1);
            int syncsBefore = controller.receivedOf(WorkerMsg.FullSyncEndMsg.class).size();
            int chunks = 0;
            for (int i = 0; worker.counters().get("lmcache:controller_ops_dropped") == 0 && i < 8; i++) {
                store(engine, arena, 1024, 200 + i); // 16 chunks at once into a queue of 2
                chunks += 16;
            }
            assertTrue(worker.counters().get("lmcache:controller_ops_dropped") > 0, "overflow is counted");
            await("a full sync after the overflow",
                    () -> controller.receivedOf(WorkerMsg.FullSyncEndMsg.class).size() > syncsBefore);
            WorkerMsg.FullSyncEndMsg end = controller.receivedOf(WorkerMsg.FullSyncEndMsg.class).getLast();
            assertEquals(engine.storage().cpu().size(), end.actualTotalKeys(), "the sync sends what the tier holds");
            assertTrue(chunks > 0);
        }
    }

    @Test
    void closeDeregistersAndStopsEveryThread() throws Exception {
        Set<String> before = threadNames();
        try (FakeController controller = new FakeController()) {
            WorkerMsg.DeRegisterMsg expected;
            try (LMCacheEngine engine = engine(controller.pullPort, controller.replyPort, 16)) {
                ControllerWorker worker = engine.controllerWorker().orElseThrow();
                await("registration", worker::registered);
                expected = new WorkerMsg.DeRegisterMsg("test-instance", 0, worker.controlIp(), worker.controlPort());
            }
            await("the deregistration", () -> controller.receivedOf(WorkerMsg.DeRegisterMsg.class).contains(expected));
        }
        await("no thread left behind", () -> before.containsAll(threadNames()));
    }
}
