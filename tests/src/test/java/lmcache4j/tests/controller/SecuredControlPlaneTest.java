package lmcache4j.tests.controller;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.function.BooleanSupplier;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

import lmcache4j.allocator.DType;
import lmcache4j.engine.LMCacheEngine;
import lmcache4j.engine.ModelMetadata;
import lmcache4j.engine.config.ConfigLoader;
import lmcache4j.engine.connector.KvConnector;
import lmcache4j.engine.connector.PagedKvCache;
import lmcache4j.engine.connector.PagedLayout;
import lmcache4j.engine.controller.message.ControlMsg;
import lmcache4j.engine.controller.message.ControllerCodec;
import lmcache4j.engine.controller.message.WorkerReqMsg;
import lmcache4j.engine.json.Json;
import lmcache4j.engine.security.DeploymentSecret;
import lmcache4j.server.controller.ControllerConfig;
import lmcache4j.server.controller.ControllerServer;
import lmcache4j.engine.zmq.OwnedZContext;

/**
 * A deployment with a secret, attacked from loopback: an engine and the controller talk over CURVE
 * (registration, admits, a lookup, a clear forwarded to the engine's control socket); a peer without
 * the secret, or with another one, registers nothing, clears nothing and reads no HTTP route.
 */
@Timeout(120)
class SecuredControlPlaneTest {
    private static final int CHUNK = 256;
    private static final Duration SILENCE = Duration.ofSeconds(2);

    @TempDir
    Path tmp;

    @Test
    void onlyTheDeploymentsMembersReachTheControllerAndTheEngine() throws Exception {
        Path file = tmp.resolve("secret");
        DeploymentSecret secret = DeploymentSecret.createFile(file);
        DeploymentSecret stranger = DeploymentSecret.of("not this deployment's secret, 32+".getBytes(StandardCharsets.US_ASCII));
        ModelMetadata model = new ModelMetadata("secured/model", 1, 0, DType.BFLOAT16, 2, 2, 64, false);
        int[] tokens = new Random(11).ints(2 * CHUNK, 0, 128_000).toArray();
        try (ControllerServer controller = ControllerServer.start(ControllerConfig.loopbackAnyPorts()
                     .withHashSeed(Optional.of("0")).withSecretFile(Optional.of(file)));
             Arena arena = Arena.ofShared();
             LMCacheEngine engine = LMCacheEngine.create(ConfigLoader.builder().environment(Map.of())
                     .set("chunk_size", CHUNK).set("max_local_cpu_size", 0.05).set("hash_seed", "0")
                     .set("enable_controller", true).set("lmcache_instance_id", "member")
                     .set("controller_pull_url", controller.pullEndpoint().connectable().toString())
                     .set("controller_reply_url", controller.replyEndpoint().connectable().toString())
                     .set("deployment_secret_file", file.toString()).build(), model, KvConnector.host(), List.of());
             ZContext attacker = new OwnedZContext("test-secured-control-plane", 1)) {
            HttpClient http = HttpClient.newHttpClient();
            URI base = URI.create("http://" + controller.httpEndpoint().connectable() + "/");
            long[] slots = new long[tokens.length];
            Arrays.setAll(slots, i -> i);
            assertEquals(2 * CHUNK, engine.store(tokens, null, cache(arena, model), slots, Map.of()));

            await("the member's chunks indexed over CURVE", () -> controller.lookup().lookup(tokens).best()
                    .map(b -> b.instanceId().equals("member") && b.tokens() == 2 * CHUNK).orElse(false));

            // HTTP: nothing without the bearer token.
            assertEquals(401, send(http, base.resolve("instances"), null, null).statusCode());
            assertEquals(401, send(http, base.resolve("instances"), "Bearer " + stranger.bearerToken(), null).statusCode());
            HttpResponse<String> workers = send(http, base.resolve("query_worker_info"), "Bearer " + secret.bearerToken(),
                    "{\"event_id\": \"w\", \"instance_id\": \"member\"}");
            assertEquals(200, workers.statusCode(), workers.body());
            @SuppressWarnings("unchecked")
            Map<String, Object> worker = ((List<Map<String, Object>>) Json.parseObject(workers.body()).get("worker_infos")).getFirst();
            String control = "tcp://127.0.0.1:" + worker.get("port");

            // ZeroMQ: a plain peer and one with another secret go unheard, on the controller and on the engine.
            for (Optional<DeploymentSecret> who : List.of(Optional.<DeploymentSecret>empty(), Optional.of(stranger))) {
                long refusedBefore = refusedHandshakes(http, base, secret);
                ZMQ.Socket register = socket(attacker, SocketType.DEALER, who, controller.replyEndpoint().connectAddress());
                register.sendMore(new byte[0]);
                register.send(ControllerCodec.encode(new WorkerReqMsg.RegisterMsg("intruder", 0, "127.0.0.1", 1, Optional.empty())), 0);
                assertNull(register.recv(), "no answer to an unauthenticated RegisterMsg");
                ZMQ.Socket clear = socket(attacker, SocketType.REQ, who, control);
                clear.send(ControllerCodec.encode(new ControlMsg.ClearWorkerMsg("evil", "LocalCPUBackend")), 0);
                assertNull(clear.recv(), "no answer to an unauthenticated ClearWorkerMsg");
                // Counted (and logged) by the controller: a plain peer is dropped in the ZeroMQ greeting, before
                // any ZAP request; a stranger's CURVE fails its cryptography. Neither reaches the key check.
                await("the controller counting " + (who.isEmpty() ? "the plain peer" : "the stranger") + " as refused",
                        () -> refusedHandshakes(http, base, secret) > refusedBefore);
                register.close();
                clear.close();
            }
            assertEquals(2 * CHUNK, engine.lookup(tokens, Map.of(), null), "the engine's chunks are all there");
            assertTrue(controller.lookup().lookup(tokens).layout().keySet().stream().noneMatch(i -> i.equals("intruder")));
            assertTrue(send(http, base.resolve("instances"), "Bearer " + secret.bearerToken(), null).body().contains("\"member\""));
            assertTrue(!send(http, base.resolve("instances"), "Bearer " + secret.bearerToken(), null).body().contains("intruder"));

            // The controller's own command reaches the engine over CURVE.
            HttpResponse<String> cleared = send(http, base.resolve("clear"), "Bearer " + secret.bearerToken(),
                    "{\"event_id\": \"c\", \"instance_id\": \"member\", \"location\": \"LocalCPUBackend\"}");
            assertEquals(200, cleared.statusCode(), cleared.body());
            assertEquals(0, engine.lookup(tokens, Map.of(), null), "the member's clear was carried out: " + cleared.body());
        }
    }

    /** lmcache4j_controller_curve_handshakes_refused_total from the controller's /metrics. */
    private static long refusedHandshakes(HttpClient http, URI base, DeploymentSecret secret) {
        try {
            return send(http, base.resolve("metrics"), "Bearer " + secret.bearerToken(), null).body().lines()
                    .filter(l -> l.startsWith("lmcache4j_controller_curve_handshakes_refused_total "))
                    .mapToLong(l -> (long) Double.parseDouble(l.substring(l.indexOf(' ') + 1).strip())).findFirst()
                    .orElseThrow(() -> new AssertionError("no lmcache4j_controller_curve_handshakes_refused_total in /metrics"));
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }

    private static ZMQ.Socket socket(ZContext context, SocketType type, Optional<DeploymentSecret> secret, String address) {
        ZMQ.Socket s = context.createSocket(type);
        secret.ifPresent(k -> k.connectAsMember(s));
        s.setLinger(0);
        s.setReceiveTimeOut((int) SILENCE.toMillis());
        s.setSendTimeOut((int) SILENCE.toMillis()); // a send must not wait on a handshake that never completes
        s.connect(address);
        return s;
    }

    private static HttpResponse<String> send(HttpClient http, URI uri, String authorization, String body) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(30));
        if (authorization != null) {
            b.header("Authorization", authorization);
        }
        if (body != null) {
            b.POST(HttpRequest.BodyPublishers.ofString(body));
        }
        return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    private static void await(String what, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out waiting for " + what);
            }
            Thread.sleep(20);
        }
    }

    private static PagedKvCache cache(Arena arena, ModelMetadata m) {
        int blocks = 2 * CHUNK / 16;
        long bytes = PagedKvCache.layerBytes(PagedLayout.FLASH_ATTENTION, blocks, 16, m.numKvHeads(), m.headSize(), m.kvDtype());
        List<MemorySegment> layers = new ArrayList<>();
        for (int l = 0; l < m.numLayers(); l++) {
            MemorySegment layer = arena.allocate(bytes, 64);
            layer.fill((byte) (0x11 * (l + 1)));
            layers.add(layer);
        }
        return new PagedKvCache(layers, PagedLayout.FLASH_ATTENTION, blocks, 16, m.numKvHeads(), m.headSize(), m.kvDtype());
    }
}
