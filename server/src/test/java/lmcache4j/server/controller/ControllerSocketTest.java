package lmcache4j.server.controller;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.BooleanSupplier;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import lmcache4j.engine.controller.message.ErrorMsg;
import lmcache4j.engine.controller.message.HeartbeatCommand;
import lmcache4j.engine.controller.message.OrchMsg;
import lmcache4j.engine.controller.message.OrchRetMsg;
import lmcache4j.engine.controller.message.Position;
import lmcache4j.engine.controller.message.WorkerMsg;
import lmcache4j.engine.controller.message.WorkerReqMsg;
import lmcache4j.engine.controller.message.WorkerReqRetMsg;
import lmcache4j.engine.json.Json;
import lmcache4j.server.controller.http.HttpCalls;
import lmcache4j.server.controller.index.Holder;
import lmcache4j.engine.zmq.OwnedZContext;

/** The controller over real JeroMQ sockets, driven by {@link FakeWorker}s that speak the wire format. */
@Timeout(60)
class ControllerSocketTest {
    private ControllerServer controller;

    private ControllerServer start(Duration workerTimeout, Duration requestTimeout) {
        controller = ControllerServer.start(ControllerConfig.loopbackAnyPorts().withTimeouts(workerTimeout, requestTimeout));
        return controller;
    }

    @AfterEach
    void stop() {
        if (controller != null) {
            controller.close();
        }
    }

    static void await(String what, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + 30_000_000_000L;
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out waiting for " + what);
            }
            Thread.sleep(5);
        }
    }

    private static int[] prompt(int n, int seed) {
        return new java.util.SplittableRandom(seed).ints(n, 0, 128_000).toArray();
    }

    @Test
    void aLookupNamesTheInstanceThatPushedThePromptsChunks() throws Exception {
        start(Duration.ofSeconds(30), Duration.ofSeconds(2));
        int[] tokens = prompt(1000, 1); // 3 full chunks of 256; the rest is not keyed
        long[] keys = controller.lookup().keys().of(tokens).keys();
        assertEquals(3, keys.length);
        try (FakeWorker a = new FakeWorker(controller, "engine-a", 0); FakeWorker b = new FakeWorker(controller, "engine-b", 0)) {
            WorkerReqRetMsg.RegisterRetMsg reg = a.register();
            assertEquals(controller.advertisedHeartbeat().toString(), reg.extraConfig().get("heartbeat_url"));
            b.register();
            a.push(a.admits("LocalCPUBackend", keys), a.admits("LocalDiskBackend", keys[0]));
            b.push(b.admits("LocalCPUBackend", keys[0]));
            await("5 entries", () -> controller.index().entries() == 5);

            ControllerLookup.Answer answer = controller.lookup().lookup(tokens);
            assertEquals(new ControllerLookup.Layout("engine-a", "LocalCPUBackend", 768), answer.best().orElseThrow());
            assertEquals(new ControllerLookup.Layout("engine-b", "LocalCPUBackend", 256), answer.layout().get("engine-b"));

            HttpCalls.Reply r = HttpCalls.post(http(), "/lookup", Json.write(Map.of("tokens", boxed(tokens), "event_id", "e1")));
            assertEquals(200, r.status(), r.body());
            Map<String, Object> json = Json.parseObject(r.body());
            assertEquals("e1", json.get("event_id"));
            assertEquals("engine-a", json.get("best_instance"));
            assertEquals(768L, json.get("best_tokens"));
            assertEquals(Map.of("engine-a", List.of("LocalCPUBackend", 768L), "engine-b", List.of("LocalCPUBackend", 256L)),
                    json.get("layout_info"));

            // LMCache's LookupMsg on the reply socket answers LookupRetMsg in layout_info form.
            var ret = (OrchRetMsg.LookupRetMsg) a.ask(a.dealer, new OrchMsg.LookupMsg("e2", tokens));
            assertEquals(new OrchRetMsg.Layout("LocalCPUBackend", 768), ret.layoutInfo().get("engine-a"));

            a.push(a.evicts("LocalCPUBackend", keys[1]));
            await("eviction", () -> controller.index().entries() == 4);
            assertEquals(256, controller.lookup().lookup(tokens).layout().get("engine-a").tokens());

            HttpCalls.Reply instances = HttpCalls.get(http(), "/instances");
            assertTrue(instances.body().contains("\"engine-a\"") && instances.body().contains("\"LocalDiskBackend\": 1"),
                    instances.body());
            a.push(new WorkerMsg.DeRegisterMsg("engine-a", 0, "127.0.0.1", a.repPort));
            await("deregistration", () -> controller.index().entries() == 1);
        }
    }

    @Test
    void pushesOfAnUnregisteredWorkerAreDiscardedAndHeartbeatsAskItToFullSyncUntilItStarts() throws Exception {
        start(Duration.ofSeconds(30), Duration.ofSeconds(2));
        try (FakeWorker w = new FakeWorker(controller, "engine-a", 1)) {
            w.push(w.admits("LocalCPUBackend", 1, 2, 3));
            await("discard counted", () -> controller.metrics().value("lmcache4j_controller_ops_discarded_total{reason=\"unregistered\"}") == 3);
            assertEquals(0, controller.index().entries());

            List<HeartbeatCommand> fullSync = List.of(HeartbeatCommand.FullSyncCommand.because("worker_re_registered"));
            assertEquals(fullSync, w.heartbeat().commands(), "as after a controller restart");
            // That reply may never have reached the worker (it stopped waiting for a controller busy starting up):
            // the next heartbeat asks again, and so on until the worker starts its sync.
            assertEquals(fullSync, w.heartbeat().commands(), "asked again");
            assertEquals(fullSync, w.heartbeat().commands(), "and again");

            var start = (WorkerReqRetMsg.FullSyncStartRetMsg) w.ask(w.dealer,
                    new WorkerReqMsg.FullSyncStartMsg("engine-a", 1, "LocalCPUBackend", "sync-1", 5, 3));
            assertTrue(start.accepted());
            assertEquals(List.of(), w.heartbeat().commands(), "the sync started: no more asking");
            w.push(new WorkerMsg.FullSyncBatchMsg("engine-a", 1, "LocalCPUBackend", "sync-1", 0, new long[]{10, 11}),
                    w.admits("LocalCPUBackend", 99), // incremental while syncing: discarded
                    new WorkerMsg.FullSyncBatchMsg("engine-a", 1, "LocalCPUBackend", "sync-1", 2, new long[]{14}),
                    new WorkerMsg.FullSyncEndMsg("engine-a", 1, "LocalCPUBackend", "sync-1", 5));
            await("sync batches", () -> controller.index().entries() == 3);
            var status = (WorkerReqRetMsg.FullSyncStatusRetMsg) w.ask(w.dealer,
                    new WorkerReqMsg.FullSyncStatusMsg("engine-a", 1, "sync-1"));
            assertEquals(false, status.canExitFreeze());
            assertEquals(List.of(1L), java.util.Arrays.stream(status.missingBatches()).boxed().toList());
            w.push(new WorkerMsg.FullSyncBatchMsg("engine-a", 1, "LocalCPUBackend", "sync-1", 1, new long[]{12, 13}));
            await("resent batch", () -> controller.index().entries() == 5);
            status = (WorkerReqRetMsg.FullSyncStatusRetMsg) w.ask(w.dealer, new WorkerReqMsg.FullSyncStatusMsg("engine-a", 1, "sync-1"));
            assertTrue(status.isComplete() && status.canExitFreeze());
            assertEquals(1, controller.metrics().value("lmcache4j_controller_ops_discarded_total{reason=\"syncing\"}"));
            assertEquals(List.of(new Holder("engine-a", 1, "LocalCPUBackend")), controller.index().holdersOf(13));
        }
    }

    @Test
    void aWorkerThatStopsBeatingIsDroppedWithItsEntries() throws Exception {
        start(Duration.ofMillis(1500), Duration.ofSeconds(2));
        try (FakeWorker alive = new FakeWorker(controller, "alive", 0); FakeWorker dead = new FakeWorker(controller, "dead", 0)) {
            alive.register();
            dead.register();
            alive.push(alive.admits("LocalCPUBackend", 1, 2));
            dead.push(dead.admits("LocalCPUBackend", 2, 3));
            await("4 entries", () -> controller.index().entries() == 4);
            long until = System.nanoTime() + 3_000_000_000L;
            while (System.nanoTime() < until) {
                alive.heartbeat();
                Thread.sleep(100);
            }
            await("the dead worker dropped", () -> controller.index().entries() == 2);
            assertEquals(List.of(new Holder("alive", 0, "LocalCPUBackend")), controller.index().holdersOf(2));
            assertEquals(List.of("alive"), controller.registry().workers().stream().map(w -> w.key().instanceId()).toList());
            assertEquals(1, controller.metrics().total("lmcache4j_controller_workers_expired_total"));
        }
    }

    @Test
    void controlCommandsReachEveryWorkerAndATimeoutRecreatesTheSocket() throws Exception {
        start(Duration.ofSeconds(30), Duration.ofSeconds(1)); // the no-answer case waits it out twice per request (two tries)
        try (FakeWorker w0 = new FakeWorker(controller, "engine-a", 0); FakeWorker w1 = new FakeWorker(controller, "engine-a", 1)) {
            w0.register();
            w1.register();
            HttpCalls.Reply clear = HttpCalls.post(http(), "/clear", "{\"instance_id\": \"engine-a\", \"location\": \"LocalCPUBackend\", \"event_id\": \"c1\"}");
            assertEquals(200, clear.status(), clear.body());
            // One count for the instance, as LMCache's executor reports it: each rank holds a shard of the same tokens.
            assertEquals(42L, Json.parseObject(clear.body()).get("num_tokens"));
            assertInstanceOf(lmcache4j.engine.controller.message.ControlMsg.ClearWorkerMsg.class, w0.controlReceived.getFirst());
            assertEquals("c1/1", ((lmcache4j.engine.controller.message.ControlMsg.ClearWorkerMsg) w1.controlReceived.getFirst()).workerEventId());

            HttpCalls.Reply finished = HttpCalls.post(http(), "/check_finish", "{\"event_id\": \"c1\"}");
            assertEquals(500, finished.status(), "LMCache's controller fails check_finish (NotImplementedError): " + finished.body());
            assertTrue(finished.body().contains("not implemented"), finished.body());

            HttpCalls.Reply pin = HttpCalls.post(http(), "/pin", "{\"instance_id\": \"engine-a\", \"location\": \"LocalCPUBackend\", \"tokens\": [1,2,3]}");
            assertEquals(3L, Json.parseObject(pin.body()).get("num_tokens"), pin.body());
            HttpCalls.Reply compress = HttpCalls.post(http(), "/compress", "{\"instance_id\": \"engine-a\", \"method\": \"cachegen\", "
                    + "\"location\": \"LocalCPUBackend\", \"tokens\": [1, 2]}");
            assertEquals(128L, Json.parseObject(compress.body()).get("num_tokens"), compress.body());
            var sentCompress = (lmcache4j.engine.controller.message.ControlMsg.CompressWorkerMsg) w0.controlReceived.getLast();
            assertEquals("cachegen", sentCompress.method());
            HttpCalls.Reply decompress = HttpCalls.post(http(), "/decompress", "{\"instance_id\": \"engine-a\", \"method\": \"cachegen\", "
                    + "\"location\": \"LocalCPUBackend\"}");
            assertEquals(64L, Json.parseObject(decompress.body()).get("num_tokens"), decompress.body());

            HttpCalls.Reply move = HttpCalls.post(http(), "/move", "{\"old_position\": [\"engine-a\", \"LocalDiskBackend\"], "
                    + "\"new_position\": [\"engine-a\", \"LocalCPUBackend\"], \"should_copy\": true}");
            assertEquals(256L, Json.parseObject(move.body()).get("num_tokens"), move.body());
            for (FakeWorker w : List.of(w0, w1)) {
                // In-node: the worker's own control address as LMCache's worker writes it, "*:port".
                var sent = (lmcache4j.engine.controller.message.ControlMsg.MoveWorkerMsg) w.controlReceived.getLast();
                assertEquals(new Position("*:" + w.repPort, "LocalCPUBackend"), sent.newPosition());
                assertEquals(Optional.of(true), sent.copy(), "should_copy reaches the worker");
            }
            HttpCalls.Reply moveDefault = HttpCalls.post(http(), "/move", "{\"old_position\": [\"engine-a\", \"LocalDiskBackend\"], "
                    + "\"new_position\": [\"engine-a\", \"LocalCPUBackend\"]}");
            assertEquals(200, moveDefault.status(), moveDefault.body());
            assertEquals(Optional.of(false), ((lmcache4j.engine.controller.message.ControlMsg.MoveWorkerMsg) w0.controlReceived.getLast()).copy(),
                    "no should_copy: false, as LMCache's API defaults it");
            assertEquals(400, HttpCalls.post(http(), "/move", "{\"old_position\": [\"engine-a\", \"LocalDiskBackend\"], "
                    + "\"new_position\": [\"engine-a\", \"LocalCPUBackend\"], \"should_copy\": true, \"copy\": false}").status());

            w1.answer = m -> m instanceof lmcache4j.engine.controller.message.ControlMsg.HealthWorkerMsg
                    ? Optional.empty() : Optional.of(FakeWorker.defaultAnswer(m));
            HttpCalls.Reply health = HttpCalls.post(http(), "/health", "{\"instance_id\": \"engine-a\"}");
            assertEquals(200, health.status(), health.body());
            assertEquals(Map.of("0", 0L, "1", (long) Orchestrator.NO_ANSWER), Json.parseObject(health.body()).get("error_codes"));
            assertEquals(1, controller.metrics().value("lmcache4j_controller_forward_failures_total{reason=\"timeout\"}"));
            // w0's socket still works; w1's was recreated (its REP is gone, so it times out again, without wedging).
            HttpCalls.Reply again = HttpCalls.post(http(), "/health", "{\"instance_id\": \"engine-a\"}");
            assertEquals(Map.of("0", 0L, "1", (long) Orchestrator.NO_ANSWER), Json.parseObject(again.body()).get("error_codes"));

            assertEquals(404, HttpCalls.post(http(), "/clear", "{\"instance_id\": \"nobody\", \"location\": \"LocalCPUBackend\"}").status());
            HttpCalls.Reply q = HttpCalls.post(http(), "/query_instance", "{\"event_id\": \"q1\", \"ip\": \"127.0.0.1\"}");
            assertEquals(Map.of("event_id", "q1", "res", "engine-a"), Json.parseObject(q.body()), q.body());
            assertEquals(404, HttpCalls.post(http(), "/query_instance", "{\"event_id\": \"q2\", \"ip\": \"10.9.9.9\"}").status());

            HttpCalls.Reply info = HttpCalls.post(http(), "/query_worker_info", "{\"instance_id\": \"engine-a\", \"worker_ids\": [1]}");
            assertEquals(200, info.status(), info.body());
            List<?> infos = (List<?>) Json.parseObject(info.body()).get("worker_infos");
            assertEquals(1, infos.size(), info.body());
            Map<?, ?> one = (Map<?, ?>) infos.getFirst();
            assertEquals(List.of("instance_id", "worker_id", "ip", "port", "peer_init_url", "registration_time", "last_heartbeat_time"),
                    List.copyOf(one.keySet()), "LMCache's WorkerInfo fields, in its order");
            assertEquals(1L, one.get("worker_id"));
            assertEquals((long) w1.repPort, one.get("port"));
            HttpCalls.Reply all = HttpCalls.post(http(), "/query_worker_info", "{\"instance_id\": \"engine-a\"}");
            assertEquals(2, ((List<?>) Json.parseObject(all.body()).get("worker_infos")).size(), all.body());
            assertEquals(404, HttpCalls.post(http(), "/query_worker_info", "{\"instance_id\": \"nobody\"}").status());
        }
    }

    @Test
    void aMoveToAnotherInstanceNamesItsPeerUrlAndIsRefusedWithoutOne() throws Exception {
        start(Duration.ofSeconds(30), Duration.ofSeconds(10)); // a first request to a new REP can be slow on a loaded CI machine
        try (FakeWorker source = new FakeWorker(controller, "engine-a", 0);
             FakeWorker withP2p = new FakeWorker(controller, "engine-b", 0);
             FakeWorker withoutP2p = new FakeWorker(controller, "engine-c", 0)) {
            source.register();
            withP2p.register(Optional.of("127.0.0.1:7777"));
            withoutP2p.register();
            HttpCalls.Reply move = HttpCalls.post(http(), "/move", "{\"old_position\": [\"engine-a\", \"LocalCPUBackend\"], "
                    + "\"new_position\": [\"engine-b\", \"LocalCPUBackend\"], \"tokens\": [1, 2, 3]}");
            assertEquals(200, move.status(), () -> move.body() + "; source rep " + source.repThreadState() + ", frames "
                    + source.repFrames + ", received " + source.controlReceived);
            var sent = (lmcache4j.engine.controller.message.ControlMsg.MoveWorkerMsg) source.controlReceived.getLast();
            assertEquals(new Position("127.0.0.1:7777", "LocalCPUBackend"), sent.newPosition());

            int before = source.controlReceived.size();
            HttpCalls.Reply refused = HttpCalls.post(http(), "/move", "{\"old_position\": [\"engine-a\", \"LocalCPUBackend\"], "
                    + "\"new_position\": [\"engine-c\", \"LocalCPUBackend\"], \"tokens\": [1, 2, 3]}");
            assertEquals(400, refused.status(), refused.body());
            assertTrue(refused.body().contains("peer_init_url"), refused.body());
            assertEquals(before, source.controlReceived.size(), "nothing was sent to the source");
        }
    }

    @Test
    void orchestratorMessagesOnThePullSocketAreCarriedOut() throws Exception {
        start(Duration.ofSeconds(30), Duration.ofSeconds(2));
        try (FakeWorker w = new FakeWorker(controller, "engine-a", 0)) {
            w.register();
            w.push.send(lmcache4j.engine.controller.message.ControllerCodec.encode(new OrchMsg.ClearMsg("o1", "engine-a", "LocalCPUBackend")), 0);
            try {
                await("the clear forwarded", () -> !w.controlReceived.isEmpty());
            } catch (AssertionError e) {
                throw new AssertionError(e.getMessage() + "; rep thread " + w.repThreadState() + ", port " + w.repPort
                        + ", workers " + controller.registry().workers() + "; metrics:\n" + controller.metrics().render(), e);
            }
            assertEquals("o1/0", w.controlReceived.getFirst().workerEventId());
        }
    }

    @Test
    void aRequestOfTheWrongKindOnTheReplySocketGetsAnErrorMsg() throws Exception {
        start(Duration.ofSeconds(30), Duration.ofSeconds(2));
        try (FakeWorker w = new FakeWorker(controller, "engine-a", 0)) {
            var reply = w.ask(w.dealer, w.admits("LocalCPUBackend", 1));
            assertTrue(((ErrorMsg) reply).error().contains("BatchedKVOperationMsg"), reply.toString());
            assertEquals(1, controller.metrics().total("lmcache4j_controller_unknown_messages_total"));
        }
    }

    @Test
    @SuppressWarnings("unchecked")
    void instancesComeAPageAtATime() throws Exception {
        start(Duration.ofSeconds(120), Duration.ofSeconds(2));
        List<FakeWorker> workers = new java.util.ArrayList<>();
        try {
            for (int i = 0; i < 5; i++) {
                FakeWorker w = new FakeWorker(controller, "engine-" + i, 0);
                workers.add(w);
                w.register();
            }
            Map<String, Object> first = Json.parseObject(HttpCalls.get(http(), "/instances?limit=2").body());
            assertEquals(List.of("engine-0", "engine-1"), ((List<Map<String, Object>>) first.get("instances")).stream()
                    .map(m -> m.get("instance_id")).toList());
            assertEquals(5L, first.get("total_instances"));
            assertEquals(2L, first.get("next_offset"));
            Map<String, Object> last = Json.parseObject(HttpCalls.get(http(), "/instances?offset=4&limit=2").body());
            assertEquals(1, ((List<?>) last.get("instances")).size());
            assertEquals(null, last.get("next_offset"));
            Map<String, Object> all = Json.parseObject(HttpCalls.get(http(), "/instances").body());
            assertEquals(5, ((List<?>) all.get("instances")).size(), "the default page holds them all");
            for (String bad : List.of("limit=abc", "limit=10001", "offset=-1", "offset=99999999999")) {
                HttpCalls.Reply r = HttpCalls.get(http(), "/instances?" + bad);
                assertEquals(400, r.status(), bad + ": " + r.body());
            }
            assertEquals(400, HttpCalls.get(http(), "/instances?" + "a=1&".repeat(17)).status(), "too many parameters");
        } finally {
            for (FakeWorker w : workers) {
                w.close();
            }
        }
    }

    /** 500 silent workers once made each /health start 500 threads (2,030 seen); now at most FORWARD_THREADS. */
    @Test
    void aHealthCheckOfManySilentWorkersUsesABoundedNumberOfThreads() throws Exception {
        start(Duration.ofSeconds(120), Duration.ofMillis(500));
        int silent = 3 * Orchestrator.FORWARD_THREADS;
        List<java.net.ServerSocket> mute = new java.util.ArrayList<>(); // accept TCP, never speak: silent workers
        for (int i = 0; i < silent; i++) {
            mute.add(new java.net.ServerSocket(0, 4, java.net.InetAddress.getLoopbackAddress()));
        }
        try (FakeWorker live = new FakeWorker(controller, "many", 0);
                org.zeromq.ZContext zmq = new OwnedZContext("test-controller-socket", 1)) {
            live.register();
            org.zeromq.ZMQ.Socket dealer = zmq.createSocket(org.zeromq.SocketType.DEALER);
            dealer.setLinger(0);
            dealer.setReceiveTimeOut(30_000);
            dealer.connect(controller.replyEndpoint().connectAddress());
            for (int i = 1; i <= silent; i++) {
                assertInstanceOf(WorkerReqRetMsg.RegisterRetMsg.class, live.ask(dealer,
                        new WorkerReqMsg.RegisterMsg("many", i, "127.0.0.1", mute.get(i - 1).getLocalPort(), Optional.empty())));
            }
            java.util.concurrent.atomic.AtomicInteger most = new java.util.concurrent.atomic.AtomicInteger();
            java.util.concurrent.atomic.AtomicBoolean sampling = new java.util.concurrent.atomic.AtomicBoolean(true);
            Thread sampler = Thread.ofPlatform().start(() -> {
                while (sampling.get()) {
                    int n = (int) Thread.getAllStackTraces().keySet().stream()
                            .filter(t -> t.getName().startsWith("lmcache4j-controller-forward")).count();
                    most.accumulateAndGet(n, Math::max);
                    Thread.onSpinWait();
                }
            });
            Orchestrator.Health health;
            try {
                health = controller.orchestrator().health("h", "many");
            } finally {
                sampling.set(false);
                sampler.join();
            }
            assertEquals(silent + 1, health.errorCodes().size());
            assertEquals(0, health.errorCodes().get(0), "the live worker answered");
            assertEquals(silent, health.errors().size(), health.errors().toString());
            assertTrue(most.get() > 1 && most.get() <= Orchestrator.FORWARD_THREADS, "forward threads at once: " + most.get());
        } finally {
            for (java.net.ServerSocket m : mute) {
                m.close();
            }
        }
    }

    private java.net.InetSocketAddress http() {
        Endpoint e = controller.httpEndpoint();
        return new java.net.InetSocketAddress(e.host(), e.port());
    }

    static List<Long> boxed(int[] tokens) {
        return java.util.Arrays.stream(tokens).asLongStream().boxed().toList();
    }
}
