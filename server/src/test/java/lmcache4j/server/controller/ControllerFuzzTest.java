package lmcache4j.server.controller;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

import lmcache4j.engine.controller.message.ControllerCodec;
import lmcache4j.engine.controller.message.ErrorMsg;
import lmcache4j.engine.controller.message.WorkerReqMsg;
import lmcache4j.engine.json.Json;
import lmcache4j.server.controller.http.HttpCalls;
import lmcache4j.engine.zmq.OwnedZContext;

/**
 * A bounded fuzz of every socket and the HTTP API: random bytes, truncated and bit-flipped valid
 * frames, unknown types, broken ROUTER envelopes, and bad HTTP requests. The controller counts
 * and drops them, answers ErrorMsg on the ROUTERs, and then still serves a well-formed worker and
 * lookup. {@code -Dlmcache4j.fuzz.frames=N} sets the pushed frames (default 2,000; a quarter as many requests on the ROUTERs).
 */
@Timeout(300) // generous: a 2-core machine shared with other builds slows round trips 20-fold
class ControllerFuzzTest {
    private final ControllerServer controller = ControllerServer.start(ControllerConfig.loopbackAnyPorts()
            .withTimeouts(Duration.ofSeconds(30), Duration.ofSeconds(1)));

    @AfterEach
    void stop() {
        controller.close();
    }

    private static byte[] garbage(SplittableRandom r, List<byte[]> valid) {
        byte[] v = valid.get(r.nextInt(valid.size()));
        return switch (r.nextInt(6)) {
            case 0 -> r.ints(r.nextInt(64), 0, 256).collect(java.io.ByteArrayOutputStream::new,
                    (o, b) -> o.write(b), (x, y) -> { }).toByteArray();
            case 1 -> Arrays.copyOf(v, r.nextInt(v.length)); // truncated
            case 2 -> { // a flipped byte
                byte[] c = v.clone();
                c[r.nextInt(c.length)] ^= (byte) (1 + r.nextInt(255));
                yield c;
            }
            case 3 -> { // trailing bytes
                byte[] c = Arrays.copyOf(v, v.length + 1 + r.nextInt(8));
                yield c;
            }
            case 4 -> new byte[]{(byte) 0xdd, (byte) 0xff, (byte) 0xff, (byte) 0xff, (byte) 0xff}; // array32 of 2^32-1 in 5 bytes
            default -> "{\"type\": \"NoSuchMsg\"}".getBytes(StandardCharsets.UTF_8);
        };
    }

    @Test
    void garbageOnEverySocketIsCountedAndDroppedAndTheControllerKeepsServing() throws Exception {
        int frames = Integer.getInteger("lmcache4j.fuzz.frames", 2_000);
        SplittableRandom r = new SplittableRandom(13);
        try (FakeWorker w = new FakeWorker(controller, "fuzzer", 0);
                ZContext ctx = new OwnedZContext("test-controller-fuzz", 1)) {
            List<byte[]> valid = List.of(
                    ControllerCodec.encode(w.admits("LocalCPUBackend", 1, 2, 3)),
                    ControllerCodec.encode(new WorkerReqMsg.RegisterMsg("fuzzer", 0, "127.0.0.1", w.repPort, java.util.Optional.empty())),
                    ControllerCodec.encode(new WorkerReqMsg.HeartbeatMsg("fuzzer", 0, "127.0.0.1", w.repPort, java.util.Optional.empty())));
            // PULL: multipart pushes of garbage.
            for (int i = 0; i < frames; i++) {
                w.push.send(garbage(r, valid), r.nextInt(4) == 0 ? ZMQ.SNDMORE : 0);
            }
            w.push.send(new byte[0], 0);
            // ROUTERs: garbage payloads get an ErrorMsg back; broken envelopes too.
            int errors = 0;
            int requests = Math.max(1, frames / 4); // round trips, one at a time: fewer than the pushes
            for (int i = 0; i < requests; i++) {
                ZMQ.Socket s = i % 2 == 0 ? w.dealer : w.heartbeatDealer;
                byte[] g = garbage(r, valid.subList(0, 1)); // mutations of a pushed message: never a valid request
                s.send(new byte[0], ZMQ.SNDMORE);
                s.send(g, 0);
                assertEquals(0, s.recv(0).length);
                if (ControllerCodec.decode(s.recv(0)) instanceof ErrorMsg) {
                    errors++;
                }
            }
            assertEquals(requests, errors);
            ZMQ.Socket raw = ctx.createSocket(SocketType.DEALER);
            raw.setReceiveTimeOut(30_000);
            raw.connect(controller.replyEndpoint().connectAddress());
            raw.send("x", ZMQ.SNDMORE); // not an empty delimiter: a broken envelope
            raw.send("y", ZMQ.SNDMORE);
            raw.send("z", 0);
            assertEquals(0, raw.recv(0).length);
            assertInstanceOf(ErrorMsg.class, ControllerCodec.decode(raw.recv(0)));

            ControllerSocketTest.await("every pushed frame read", () -> controller.metrics()
                    .total("lmcache4j_controller_malformed_messages_total") + controller.metrics()
                    .total("lmcache4j_controller_unknown_messages_total") + controller.metrics()
                    .total("lmcache4j_controller_ops_discarded_total") >= frames / 2);
            long malformed = controller.metrics().total("lmcache4j_controller_malformed_messages_total");
            long unknown = controller.metrics().total("lmcache4j_controller_unknown_messages_total");
            assertTrue(malformed > frames && unknown > 0, "malformed " + malformed + ", unknown " + unknown);

            // Still serving: a real worker registers and is found.
            w.register();
            int[] tokens = new SplittableRandom(5).ints(512, 0, 1000).toArray();
            w.push(w.admits("LocalCPUBackend", controller.lookup().keys().of(tokens).keys()));
            ControllerSocketTest.await("the real worker indexed",
                    () -> controller.lookup().lookup(tokens).best().map(b -> b.tokens() == 512).orElse(false));
            HttpCalls.Reply metrics = HttpCalls.get(http(), "/metrics");
            assertTrue(metrics.body().contains("lmcache4j_controller_malformed_messages_total{socket=\"pull\"}"), metrics.body());
        }
    }

    @Test
    void badHttpRequestsAreRefusedClearlyAndTheApiKeepsServing() throws Exception {
        var at = http();
        record Bad(String method, String path, byte[] body, int status, String says) {
        }
        byte[] huge = new byte[controller.config().maxBodyBytes() + 10];
        Arrays.fill(huge, (byte) ' ');
        List<Bad> bad = List.of(
                new Bad("POST", "/lookup", "{".getBytes(), 400, "bad JSON"),
                new Bad("POST", "/lookup", "[1,2]".getBytes(), 400, "expected a JSON object"),
                new Bad("POST", "/lookup", "{}".getBytes(), 400, "missing field"),
                new Bad("POST", "/lookup", "{\"tokens\": [1, -2]}".getBytes(), 400, "[1] must be a token id"),
                new Bad("POST", "/lookup", "{\"tokens\": \"abc\"}".getBytes(), 400, "must be an array"),
                new Bad("POST", "/lookup", "{\"tokens\": [1.5]}".getBytes(), 400, "must be a token id"),
                new Bad("POST", "/lookup", new byte[0], 400, "empty"),
                new Bad("POST", "/lookup", new byte[]{'{', (byte) 0xff, '}'}, 415, "not UTF-8"),
                new Bad("POST", "/lookup", huge, 413, "larger than"),
                new Bad("GET", "/lookup", null, 405, "takes POST"),
                new Bad("POST", "/metrics", "{}".getBytes(), 405, "takes GET"),
                new Bad("DELETE", "/instances", null, 405, "not allowed"),
                new Bad("GET", "/nope", null, 404, "no such path"),
                new Bad("POST", "/move", "{\"old_position\": [\"a\"], \"new_position\": [\"a\", \"b\"]}".getBytes(), 400, "two strings"),
                new Bad("POST", "/health", "{\"instance_id\": 7}".getBytes(), 400, "must be a string"),
                new Bad("POST", "/clear", "{\"instance_id\": \"nobody\", \"location\": \"x\"}".getBytes(), 404, "no registered worker"));
        SplittableRandom r = new SplittableRandom(3);
        for (int round = 0; round < 5; round++) {
            for (Bad b : bad) {
                HttpCalls.Reply reply = HttpCalls.call(at, b.method(), b.path(), b.body());
                assertEquals(b.status(), reply.status(), b.path() + " " + reply.body());
                assertTrue(reply.body().contains(b.says()), b.path() + ": " + reply.body());
            }
            byte[] noise = new byte[r.nextInt(200)];
            r.nextBytes(noise);
            assertTrue(HttpCalls.call(at, "POST", "/lookup", noise).status() >= 400);
        }
        HttpCalls.Reply ok = HttpCalls.post(at, "/lookup", "{\"tokens\": [1,2,3]}");
        assertEquals(200, ok.status(), ok.body());
        assertEquals(Map.of(), Json.parseObject(ok.body()).get("layout_info"));
        assertTrue(controller.metrics().value("lmcache4j_controller_http_requests_total{path=\"/lookup\",status=\"400\"}") >= 5 * 6);
        assertTrue(HttpCalls.get(at, "/metrics").body().contains("status=\"413\""));
    }

    private java.net.InetSocketAddress http() {
        var e = controller.httpEndpoint();
        return new java.net.InetSocketAddress(e.host(), e.port());
    }
}
