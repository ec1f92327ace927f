package lmcache4j.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.HttpURLConnection;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import lmcache4j.engine.json.Json;
import lmcache4j.engine.security.DeploymentSecret;

@Timeout(60)
class ControllerCommandTest {
    private static final String[] ANY_PORTS = {"--pull", "127.0.0.1:0", "--reply", "127.0.0.1:0", "--heartbeat", "127.0.0.1:0",
            "--http", "127.0.0.1:0", "--insecure"};

    @Test
    void helpAndBadArguments() {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        assertEquals(0, ControllerCommand.run(new String[] {"--help"}, new PrintStream(out), new PrintStream(err)));
        assertTrue(out.toString().contains("usage: ./lmcache4j controller") && out.toString().contains("--worker-timeout"));
        for (String[] bad : new String[][] {{"--pull", "nohost"}, {"--http", "127.0.0.1:70000"}, {"--chunk-size", "0"},
                {"--worker-timeout", "-1"}, {"--request-timeout", "x"}, {"--hash-algorithm", "builtin"}, {"--bogus"},
                {"--max-body-mb", "0"}, {"--max-frame-mb", "9999"}}) {
            err.reset();
            assertEquals(2, ControllerCommand.run(bad, new PrintStream(out), new PrintStream(err)), String.join(" ", bad));
            assertEquals(1, err.toString().lines().count(), err.toString());
        }
    }

    @Test
    void withoutASecretOnlyInsecureStartsAndWithOneTheHttpApiWantsTheBearer(@TempDir Path dir) throws Exception {
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        String[] plain = {"--pull", "127.0.0.1:0", "--reply", "127.0.0.1:0", "--heartbeat", "127.0.0.1:0", "--http", "127.0.0.1:0"};
        assertEquals(2, ControllerCommand.run(plain, new PrintStream(new ByteArrayOutputStream()), new PrintStream(err),
                new CountDownLatch(0)));
        assertTrue(err.toString().contains("needs a deployment secret") && err.toString().contains("--insecure"), err.toString());

        Path file = dir.resolve("secret");
        DeploymentSecret secret = DeploymentSecret.createFile(file);
        ByteArrayOutputStream printed = new ByteArrayOutputStream();
        assertEquals(0, ControllerCommand.run(new String[] {"--secret-file", file.toString(), "--print-bearer"},
                new PrintStream(printed), new PrintStream(err)));
        assertEquals(secret.bearerToken(), printed.toString().strip());
        err.reset();
        assertEquals(2, ControllerCommand.run(new String[] {"--secret-file", file.toString(), "--insecure"},
                new PrintStream(printed), new PrintStream(err)));
        assertTrue(err.toString().contains("exclude each other"), err.toString());

        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8);
        CountDownLatch stop = new CountDownLatch(1);
        int[] rc = {-1};
        String[] args = java.util.stream.Stream.concat(java.util.Arrays.stream(plain),
                java.util.stream.Stream.of("--hash-seed", "0", "--secret-file", file.toString())).toArray(String[]::new);
        Thread t = Thread.ofPlatform().start(() -> rc[0] = ControllerCommand.run(args, out, System.err, stop));
        try {
            String http = awaitHttp(bytes);
            for (String path : List.of("/instances", "/metrics")) {
                HttpURLConnection anonymous = open(http + path, null);
                assertEquals(401, anonymous.getResponseCode(), path);
                assertEquals("Bearer realm=\"lmcache4j\"", anonymous.getHeaderField("WWW-Authenticate"));
                assertEquals(401, open(http + path, "Bearer " + "0".repeat(64)).getResponseCode(), path);
                assertEquals(200, open(http + path, "Bearer " + secret.bearerToken()).getResponseCode(), path);
            }
            HttpURLConnection post = open(http + "/lookup", null);
            post.setRequestMethod("POST");
            post.setDoOutput(true);
            try (OutputStream o = post.getOutputStream()) {
                o.write("{\"tokens\": [1]}".getBytes(StandardCharsets.UTF_8));
            }
            assertEquals(401, post.getResponseCode());
        } finally {
            stop.countDown();
            t.join(10_000);
        }
        assertEquals(0, rc[0]);
    }

    @Test
    void aTakenPortIsAFailureToStart() throws Exception {
        try (java.net.ServerSocket taken = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            ByteArrayOutputStream err = new ByteArrayOutputStream();
            String[] args = ANY_PORTS.clone();
            args[7] = "127.0.0.1:" + taken.getLocalPort(); // --http on a port in use
            assertEquals(1, ControllerCommand.run(args, new PrintStream(new ByteArrayOutputStream()), new PrintStream(err), new CountDownLatch(0)));
            assertTrue(err.toString().contains("cannot start"), err.toString());
        }
    }

    @Test
    void servesTheHttpApiUntilStopped() throws Exception {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8);
        CountDownLatch stop = new CountDownLatch(1);
        int[] rc = {-1};
        String[] args = java.util.stream.Stream.concat(java.util.Arrays.stream(ANY_PORTS),
                java.util.stream.Stream.of("--hash-seed", "0", "--chunk-size", "16", "--model", "m")).toArray(String[]::new);
        Thread t = Thread.ofPlatform().start(() -> rc[0] = ControllerCommand.run(args, out, System.err, stop));
        String http = awaitHttp(bytes);
        Map<String, Object> instances = Json.parseObject(call(http + "/instances", null));
        assertEquals(16L, ((Map<?, ?>) instances.get("settings")).get("chunk_size"));
        Map<String, Object> lookup = Json.parseObject(call(http + "/lookup", "{\"tokens\": [1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17]}"));
        assertEquals(Map.of(), lookup.get("layout_info"));
        assertEquals(1L, lookup.get("chunks"));
        assertTrue(call(http + "/metrics", null).contains("lmcache4j_controller_lookup_seconds_count 1"));
        stop.countDown();
        t.join(10_000);
        assertEquals(0, rc[0]);
        String text = bytes.toString(StandardCharsets.UTF_8);
        assertTrue(text.contains("lmcache4j controller: pull 127.0.0.1:") && text.contains("lmcache4j controller: stopped"), text);
    }

    private static String awaitHttp(ByteArrayOutputStream bytes) throws InterruptedException {
        Pattern p = Pattern.compile("http (http://127\\.0\\.0\\.1:\\d+)");
        for (int i = 0; i < 1000; i++) {
            Matcher m = p.matcher(bytes.toString(StandardCharsets.UTF_8));
            if (m.find()) {
                return m.group(1);
            }
            Thread.sleep(20);
        }
        throw new AssertionError("no address line: " + bytes.toString(StandardCharsets.UTF_8));
    }

    private static HttpURLConnection open(String url, String authorization) throws Exception {
        HttpURLConnection c = (HttpURLConnection) URI.create(url).toURL().openConnection();
        if (authorization != null) {
            c.setRequestProperty("Authorization", authorization);
        }
        return c;
    }

    private static String call(String url, String body) throws Exception {
        HttpURLConnection c = (HttpURLConnection) URI.create(url).toURL().openConnection();
        if (body != null) {
            c.setRequestMethod("POST");
            c.setDoOutput(true);
            try (OutputStream o = c.getOutputStream()) {
                o.write(body.getBytes(StandardCharsets.UTF_8));
            }
        }
        assertEquals(200, c.getResponseCode());
        try (InputStream in = c.getInputStream()) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }
}
