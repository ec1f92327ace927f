package lmcache4j.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.HttpURLConnection;
import java.net.ServerSocket;
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

    /** Each of the four addresses in use is named with its option, never as JeroMQ's "Errno 48". */
    @Test
    void aPortInUseIsNamedWithTheOptionThatMovesIt() throws Exception {
        try (ServerSocket held = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            String taken = "127.0.0.1:" + held.getLocalPort();
            for (String option : List.of("--pull", "--reply", "--heartbeat", "--http")) {
                List<String> args = new java.util.ArrayList<>(List.of(ANY_PORTS));
                args.set(args.indexOf(option) + 1, taken);
                args.addAll(List.of("--hash-seed", "0"));
                ByteArrayOutputStream err = new ByteArrayOutputStream();
                assertEquals(1, ControllerCommand.run(args.toArray(String[]::new), new PrintStream(new ByteArrayOutputStream()),
                        new PrintStream(err, true, StandardCharsets.UTF_8), new CountDownLatch(0)), err.toString());
                assertEquals("lmcache4j controller: cannot start: address " + taken + " already in use (" + option + ")",
                        err.toString().strip());
            }
        }
    }

    @Test
    void withoutASecretOnlyInsecureStartsAndWithOneTheHttpApiWantsTheBearer(@TempDir Path dir) throws Exception {
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        String[] plain = {"--pull", "127.0.0.1:0", "--reply", "127.0.0.1:0", "--heartbeat", "127.0.0.1:0", "--http", "127.0.0.1:0"};
        assertEquals(2, ControllerCommand.run(plain, new PrintStream(new ByteArrayOutputStream()), new PrintStream(err),
                new CountDownLatch(0)));
        assertTrue(err.toString().contains("needs a deployment secret") && err.toString().contains("--insecure"), err.toString());
        // The recipe in a subshell: pasted as it is, it leaves the user's shell at its own umask.
        assertTrue(err.toString().contains("make one with: (umask 077; head -c 32 /dev/urandom | base64 > FILE)"), err.toString());
        err.reset();
        assertEquals(2, ControllerCommand.run(new String[] {"--print-bearer"}, new PrintStream(new ByteArrayOutputStream()),
                new PrintStream(err)));
        assertTrue(err.toString().startsWith("lmcache4j controller: --print-bearer needs the controller's secret file: "
                + "./lmcache4j controller --secret-file FILE --print-bearer"), err.toString());
        err.reset();

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
            awaitText(bytes, "lmcache4j controller: secured by the deployment secret in " + file
                    + ": CURVE on every ZeroMQ socket, a bearer token on HTTP");
            HttpURLConnection refused = open(http + "/instances", null);
            assertEquals(401, refused.getResponseCode());
            try (InputStream body = refused.getErrorStream()) {
                String text = new String(body.readAllBytes(), StandardCharsets.UTF_8);
                assertTrue(text.contains("./lmcache4j controller --secret-file FILE --print-bearer"), "the whole command: " + text);
            }
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
        assertTrue(text.contains("lmcache4j controller: --insecure: no authentication"), "the start says it is insecure: " + text);
    }

    /** Without a seed the controller warns once, in its own words (the command and the hasher both warned). */
    @Test
    void withoutAHashSeedTheWarningIsSaidOnce() throws Exception {
        List<String> warnings = new java.util.concurrent.CopyOnWriteArrayList<>();
        java.util.logging.Handler capture = new java.util.logging.Handler() {
            @Override
            public void publish(java.util.logging.LogRecord r) {
                if (r.getLevel().intValue() >= java.util.logging.Level.WARNING.intValue()) {
                    warnings.add(r.getMessage());
                }
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        };
        java.util.logging.Logger root = java.util.logging.Logger.getLogger("lmcache4j");
        root.addHandler(capture);
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        CountDownLatch stop = new CountDownLatch(1);
        int[] rc = {-1};
        Thread t = Thread.ofPlatform().start(() -> rc[0] = ControllerCommand.run(ANY_PORTS,
                new PrintStream(bytes, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8), stop));
        try {
            awaitHttp(bytes);
        } finally {
            stop.countDown();
            t.join(10_000);
            root.removeHandler(capture);
        }
        assertEquals(0, rc[0], err.toString());
        if (System.getenv("PYTHONHASHSEED") == null) {
            List<String> seedWarnings = warnings.stream().filter(w -> w.toLowerCase(java.util.Locale.ROOT).contains("hash seed"))
                    .toList();
            assertEquals(1, seedWarnings.size(), "one warning: " + seedWarnings);
            assertTrue(seedWarnings.getFirst().contains("--hash-seed"), seedWarnings.getFirst());
            assertTrue(!err.toString().toLowerCase(java.util.Locale.ROOT).contains("hash seed"), "not again on stderr: " + err);
        }
    }

    /** Waits for a start line after the address line (they are printed one after the other). */
    private static void awaitText(ByteArrayOutputStream bytes, String text) throws InterruptedException {
        for (int i = 0; i < 1000 && !bytes.toString(StandardCharsets.UTF_8).contains(text); i++) {
            Thread.sleep(20);
        }
        assertTrue(bytes.toString(StandardCharsets.UTF_8).contains(text), bytes.toString(StandardCharsets.UTF_8));
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
