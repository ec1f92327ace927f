package lmcache4j.server.router;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import lmcache4j.server.controller.ControllerConfig;
import lmcache4j.server.controller.ControllerServer;
import lmcache4j.server.controller.internal.ControllerParts;
import lmcache4j.server.controller.index.Holder;

/** The KV-aware router over a real controller's index, in process and over its HTTP API, and with a controller that fails. */
@Timeout(60)
class KvAwareRouterTest {
    private static int[] prompt(int n, int seed) {
        return new SplittableRandom(seed).ints(n, 0, 128_000).toArray();
    }

    /** Admits the first {@code chunks} chunks of {@code tokens} for {@code instance} into the controller's index. */
    private static void admit(ControllerServer controller, String instance, int[] tokens, int chunks) {
        long[] keys = controller.lookup().keys().of(tokens).keys();
        for (int i = 0; i < chunks; i++) {
            ControllerParts.index(controller).admit(new Holder(instance, 0, "LocalCPUBackend"), keys[i]);
        }
    }

    @Test
    void theLongestPrefixWinsAndTheRestFollowLoadThenTurn() {
        try (ControllerServer controller = ControllerServer.start(ControllerConfig.loopbackAnyPorts())) {
            int[] tokens = prompt(1024, 1); // 4 chunks of 256
            admit(controller, "b", tokens, 3);
            admit(controller, "c", tokens, 1);
            KvAwareRouter router = new KvAwareRouter(List.of("a", "b", "c"), PrefixSource.of(controller.lookup()));

            assertEquals(new Route("b", 768, Route.Reason.LONGEST_PREFIX), router.route(tokens));
            assertEquals(1, router.inFlight("b"));
            // b is busy, but it alone holds the longest prefix: the prompt still goes there.
            assertEquals(new Route("b", 768, Route.Reason.LONGEST_PREFIX), router.route(tokens));

            // A tie between b and c (1 chunk each): c has fewer requests in flight.
            int[] first = java.util.Arrays.copyOf(tokens, 256);
            assertEquals(new Route("c", 256, Route.Reason.LONGEST_PREFIX_TIE), router.route(first));

            // Nobody holds it: the least loaded instance, a.
            assertEquals(new Route("a", 0, Route.Reason.NO_PREFIX), router.route(prompt(512, 2)));
            router.finished("a");
            router.finished("b");
            router.finished("b");
            router.finished("c");
            // All idle: unknown prompts go round in turn, so every instance gets one of three.
            List<String> chosen = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                Route r = router.route(prompt(512, 10 + i));
                assertEquals(Route.Reason.NO_PREFIX, r.reason());
                chosen.add(r.instanceId());
                router.finished(r.instanceId());
            }
            assertEquals(List.of("a", "b", "c"), chosen.stream().sorted().toList());
        }
    }

    @Test
    void overHttpTheRouterReadsTheControllersLookup() {
        try (ControllerServer controller = ControllerServer.start(ControllerConfig.loopbackAnyPorts())) {
            int[] tokens = prompt(1024, 3);
            admit(controller, "b", tokens, 2);
            URI http = URI.create("http://" + controller.httpEndpoint().connectable());
            PrefixSource source = new ControllerHttpPrefixSource(http, Duration.ofSeconds(5));
            assertEquals(Map.of("b", 512), source.cachedPrefixes(tokens));
            KvAwareRouter router = new KvAwareRouter(List.of("a", "b"), source);
            assertEquals(new Route("b", 512, Route.Reason.LONGEST_PREFIX), router.route(tokens));
            assertEquals(0, router.lookupFailures());
        }
    }

    @Test
    void aControllerThatIsDownSlowOrGarbledStillGetsARoute() throws Exception {
        int[] tokens = prompt(512, 4);
        // Refused: a port nobody listens on.
        int closedPort;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            closedPort = s.getLocalPort();
        }
        KvAwareRouter refused = new KvAwareRouter(List.of("a", "b"),
                new ControllerHttpPrefixSource(URI.create("http://127.0.0.1:" + closedPort), Duration.ofSeconds(2)));
        assertEquals(Route.Reason.LOOKUP_FAILED, refused.route(tokens).reason());
        assertEquals(1, refused.lookupFailures());

        // Stalled: accepts, reads, never answers; the route comes within the timeout.
        try (ServerSocket stall = new ServerSocket(0, 8, InetAddress.getLoopbackAddress())) {
            Thread acceptor = Thread.ofVirtual().start(() -> {
                List<Socket> held = new ArrayList<>();
                try {
                    while (true) {
                        held.add(stall.accept());
                    }
                } catch (IOException e) {
                    held.forEach(KvAwareRouterTest::closeQuietly);
                }
            });
            KvAwareRouter stalled = new KvAwareRouter(List.of("a"), new ControllerHttpPrefixSource(
                    URI.create("http://127.0.0.1:" + stall.getLocalPort()), Duration.ofMillis(500)));
            long t0 = System.nanoTime();
            assertEquals(new Route("a", 0, Route.Reason.LOOKUP_FAILED), stalled.route(tokens));
            assertTrue(System.nanoTime() - t0 < 5_000_000_000L, "the route took longer than the timeout allows");
            stall.close();
            acceptor.join(5_000);
        }

        // Garbled: HTTP 200 with a body of another shape.
        for (String body : List.of("not json", "{\"layout_info\": {\"a\": [\"LocalCPUBackend\", -5]}}", "{\"best\": 1}")) {
            try (ServerSocket garbled = new ServerSocket(0, 8, InetAddress.getLoopbackAddress())) {
                Thread server = Thread.ofVirtual().start(() -> answerOnce(garbled, body));
                KvAwareRouter router = new KvAwareRouter(List.of("a"), new ControllerHttpPrefixSource(
                        URI.create("http://127.0.0.1:" + garbled.getLocalPort()), Duration.ofSeconds(5)));
                assertEquals(Route.Reason.LOOKUP_FAILED, router.route(tokens).reason(), body);
                server.join(5_000);
            }
        }
    }

    @Test
    void badArgumentsAreRefused() {
        PrefixSource none = t -> Map.of();
        assertThrows(IllegalArgumentException.class, () -> new KvAwareRouter(List.of(), none));
        assertThrows(IllegalArgumentException.class, () -> new KvAwareRouter(List.of("a", "a"), none));
        KvAwareRouter router = new KvAwareRouter(List.of("a"), none);
        assertThrows(IllegalStateException.class, () -> router.finished("a"));
        assertThrows(IllegalArgumentException.class, () -> router.finished("zz"));
        assertThrows(IllegalArgumentException.class,
                () -> new ControllerHttpPrefixSource(URI.create("ftp://127.0.0.1:1"), Duration.ofSeconds(1)));
        assertThrows(IllegalArgumentException.class,
                () -> new ControllerHttpPrefixSource(URI.create("http://127.0.0.1:1"), Duration.ZERO));
    }

    private static void answerOnce(ServerSocket server, String body) {
        try (Socket s = server.accept()) {
            InputStream in = s.getInputStream();
            byte[] buf = new byte[65_536];
            StringBuilder request = new StringBuilder();
            int contentLength = -1;
            int n;
            while ((n = in.read(buf)) > 0) {
                request.append(new String(buf, 0, n, StandardCharsets.ISO_8859_1));
                int end = request.indexOf("\r\n\r\n");
                if (end >= 0) {
                    String head = request.substring(0, end).toLowerCase(java.util.Locale.ROOT);
                    int at = head.indexOf("content-length:");
                    contentLength = at < 0 ? 0 : Integer.parseInt(head.substring(at + 15).split("\r\n")[0].trim());
                    if (request.length() - end - 4 >= contentLength) {
                        break;
                    }
                }
            }
            byte[] payload = body.getBytes(StandardCharsets.UTF_8);
            OutputStream out = s.getOutputStream();
            out.write(("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " + payload.length
                    + "\r\nConnection: close\r\n\r\n").getBytes(StandardCharsets.ISO_8859_1));
            out.write(payload);
            out.flush();
        } catch (IOException e) {
            // the client gave up: nothing to answer
        }
    }

    private static void closeQuietly(Socket s) {
        try {
            s.close();
        } catch (IOException e) {
            // closing
        }
    }
}
