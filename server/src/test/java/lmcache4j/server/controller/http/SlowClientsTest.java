package lmcache4j.server.controller.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import lmcache4j.server.controller.ControllerConfig;
import lmcache4j.server.controller.ControllerServer;
import lmcache4j.server.controller.Endpoint;

/**
 * The controller's HTTP API under the attacks that stopped it when four pool threads served every
 * connection: clients that send their headers slowly, bodies that never finish, refused huge
 * bodies, and a number of a million digits. Valid lookups are answered while all of them are held.
 */
@Timeout(120)
class SlowClientsTest {
    private static final int EACH = 16; // four times the old pool, per kind of attack

    @Test
    void validLookupsAreAnsweredWhileSlowClientsHoldConnections() throws Exception {
        try (ControllerServer controller = ControllerServer.start(ControllerConfig.loopbackAnyPorts())) {
            Endpoint e = controller.httpEndpoint();
            InetSocketAddress http = new InetSocketAddress(e.host(), e.port());
            List<Socket> held = new ArrayList<>();
            try {
                for (int i = 0; i < EACH; i++) {
                    held.add(open(http, "POST /lookup HTTP/1.1\r\nHost: x\r\nContent-"));  // headers never end
                    held.add(open(http, "POST /lookup HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n{\"tokens\": ["));
                    held.add(open(http, "POST /lookup HTTP/1.1\r\nHost: x\r\nContent-Length: 2147483647\r\n\r\n{"));
                }
                String valid = "{\"tokens\": [1, 2, 3], \"event_id\": \"e\"}";
                for (int i = 0; i < 5; i++) {
                    long t0 = System.nanoTime();
                    HttpCalls.Reply r = HttpCalls.post(http, "/lookup", valid);
                    long millis = (System.nanoTime() - t0) / 1_000_000;
                    assertEquals(200, r.status(), r.body());
                    assertTrue(millis < 5_000, "a valid lookup took " + millis + " ms");
                }

                long t0 = System.nanoTime();
                HttpCalls.Reply huge = HttpCalls.post(http, "/lookup", "{\"tokens\": [1." + "7".repeat(1_000_000) + "]}");
                long millis = (System.nanoTime() - t0) / 1_000_000;
                assertEquals(400, huge.status(), huge.body());
                assertTrue(huge.body().contains("a number of at most 40 characters"), huge.body());
                assertTrue(millis < 5_000, "a million-digit number took " + millis + " ms to refuse");
            } finally {
                for (Socket s : held) {
                    s.close();
                }
            }
        }
    }

    /** A connection that has sent {@code prefix} and then nothing. */
    private static Socket open(InetSocketAddress http, String prefix) throws Exception {
        Socket s = new Socket(http.getAddress(), http.getPort());
        OutputStream out = s.getOutputStream();
        out.write(prefix.getBytes(StandardCharsets.US_ASCII));
        out.flush();
        return s;
    }
}
