package lmcache4j.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.net.HttpURLConnection;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code ./lmcache4j pd-proxy} and {@code pd-worker}: every bad argument or config is a usage error
 * (exit 2) naming what to fix; a proxy starts, answers {@code /status}, refuses a bad request naming
 * the field, and stops on its signal.
 */
@Timeout(120)
class PdCommandsTest {
    @TempDir
    Path dir;

    private record Run(int exit, String out, String err) {
    }

    private static Run proxy(CountDownLatch stop, String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int exit = PdProxyCommand.run(args, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8), stop);
        return new Run(exit, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    private static Run worker(Map<String, String> env, String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int exit = PdWorkerCommand.run(List.of(args), env, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8), new CountDownLatch(0));
        return new Run(exit, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    private Path tokenFile(String token) throws IOException {
        Path f = dir.resolve("token-" + token.length());
        Files.writeString(f, token);
        return f;
    }

    @Test
    void theProxysBadArgumentsAreUsageErrorsNamingTheOption() throws IOException {
        String token = tokenFile("0123456789abcdef0123").toString();
        String[][] bad = {
                {"--prefiller", "nohost", "--decoder", "a:1", "--token-file", token},
                {"--prefiller", "a:0", "--decoder", "a:1", "--token-file", token},
                {"--prefiller", "a:1", "--decoder", "a:99999", "--token-file", token},
                {"--prefiller", "a:1", "--decoder", "a:2"},
                {"--prefiller", "a:1", "--token-file", token},
                {"--prefiller", "a:1", "--decoder", "a:2", "--token-file", token, "--secret-file", token},
                {"--prefiller", "a:1", "--decoder", "a:2", "--token-file", tokenFile("short").toString()},
                {"--prefiller", "a:1", "--decoder", "a:2", "--token-file", token, "--max-requests", "0"},
                {"--prefiller", "a:1", "--decoder", "a:2", "--token-file", token, "--notice-timeout-ms", "never"},
                {"--prefiller", "a:1", "--decoder", "a:2", "--token-file", token, "--port", "-3"},
                {"--bogus"}};
        String[] named = {"--prefiller", "--prefiller", "--decoder", "--secret-file", "--decoder", "--secret-file",
                "--token-file", "--max-requests", "--notice-timeout-ms", "--port", "--bogus"};
        for (int i = 0; i < bad.length; i++) {
            Run r = proxy(new CountDownLatch(0), bad[i]);
            assertEquals(2, r.exit(), String.join(" ", bad[i]) + ": " + r.err());
            assertTrue(r.err().contains(named[i]), String.join(" ", bad[i]) + " names " + named[i] + ": " + r.err());
        }
    }

    @Test
    void theWorkersBearerIsPrintedFromTheDeploymentsToken() throws IOException {
        String token = "0123456789abcdef0123";
        Run r = proxy(new CountDownLatch(0), "--token-file", tokenFile(token).toString(), "--print-worker-bearer");
        assertEquals(0, r.exit(), r.err());
        assertEquals("Authorization: " + lmcache4j.server.pd.PdWorkerServer.authorization(token.getBytes(StandardCharsets.UTF_8)),
                "Authorization: Bearer " + r.out().strip(), "what the workers demand");
        Run none = proxy(new CountDownLatch(0), "--print-worker-bearer");
        assertEquals(2, none.exit());
        assertTrue(none.err().contains("--print-worker-bearer needs one of --secret-file or --token-file"), none.err());
    }

    @Test
    void aProxyStartsAnswersItsStatusRefusesABadRequestAndStops() throws Exception {
        CountDownLatch stop = new CountDownLatch(1);
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        String token = tokenFile("0123456789abcdef0123").toString();
        CompletableFuture<Integer> exit = CompletableFuture.supplyAsync(() -> PdProxyCommand.run(new String[] {"--port", "0",
                "--notice-port", "0", "--prefiller", "127.0.0.1:1", "--decoder", "127.0.0.1:2", "--token-file", token},
                new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8), stop));
        Pattern listening = Pattern.compile("HTTP API on 127\\.0\\.0\\.1:(\\d+)");
        Matcher m = listening.matcher("");
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (!(m = listening.matcher(out.toString(StandardCharsets.UTF_8))).find() && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
        String base = "http://127.0.0.1:" + m.group(1);
        Answer status = call(base + "/status", null);
        assertEquals(200, status.code());
        assertTrue(status.body().contains("\"notices\": 0"), status.body());
        Answer bad = call(base + "/generate", "{\"prompt_token_ids\": [1, -2], \"max_tokens\": 2}");
        assertEquals(400, bad.code());
        assertTrue(bad.body().contains("prompt_token_ids"), bad.body());
        Answer nobody = call(base + "/generate", "{\"prompt_token_ids\": [1, 2], \"max_tokens\": 2}");
        assertEquals(502, nobody.code(), "no worker listens: " + nobody.body());
        assertTrue(nobody.body().contains("decoder 127.0.0.1:2"), nobody.body());
        stop.countDown();
        assertEquals(0, exit.get(60, TimeUnit.SECONDS), err.toString(StandardCharsets.UTF_8));
        assertTrue(out.toString(StandardCharsets.UTF_8).contains("PD proxy stopped"), out.toString(StandardCharsets.UTF_8));
    }

    private record Answer(int code, String body) {
    }

    /** A GET, or with {@code body} a POST, through the JDK's plain HTTP client (this module does not read java.net.http). */
    private static Answer call(String url, String body) throws IOException {
        HttpURLConnection c = (HttpURLConnection) URI.create(url).toURL().openConnection();
        try {
            if (body != null) {
                c.setRequestMethod("POST");
                c.setDoOutput(true);
                c.getOutputStream().write(body.getBytes(StandardCharsets.UTF_8));
            }
            int code = c.getResponseCode();
            var in = code < 400 ? c.getInputStream() : c.getErrorStream();
            return new Answer(code, new String(in.readAllBytes(), StandardCharsets.UTF_8));
        } finally {
            c.disconnect();
        }
    }

    @Test
    void aWorkersBadRoleOrConfigIsAUsageErrorNamingWhatToSet() {
        Run noRole = worker(Map.of());
        assertEquals(2, noRole.exit(), noRole.err());
        assertTrue(noRole.err().contains("--role is required: prefiller, decoder or colocated"), noRole.err());
        Run bogus = worker(Map.of(), "--role", "prefill");
        assertEquals(2, bogus.exit());
        assertTrue(bogus.err().contains("prefiller, decoder or colocated"), bogus.err());
        Run noToken = worker(Map.of(), "--role", "decoder");
        assertEquals(2, noToken.exit(), noToken.err());
        assertTrue(noToken.err().contains("enable_pd needs a token") && noToken.err().contains("p2p_token"), noToken.err());
        Map<String, String> token = Map.of("LMCACHE_EXTRA_CONFIG", "{\"p2p_token\": \"0123456789abcdef0123\"}");
        Run noProxy = worker(token, "--role", "prefiller");
        assertEquals(2, noProxy.exit(), noProxy.err());
        assertTrue(noProxy.err().contains("pd_proxy_host and pd_proxy_port"), noProxy.err());
        Run wrongRole = worker(token, "--role", "decoder", "--set", "enable_pd=true", "--set", "pd_role=sender");
        assertEquals(2, wrongRole.exit());
        assertTrue(wrongRole.err().contains("--role decoder runs with pd_role: receiver"), wrongRole.err());
        Run nixl = worker(token, "--role", "decoder", "--set", "transfer_channel=nixl");
        assertEquals(2, nixl.exit());
        assertTrue(nixl.err().contains("its one channel is tcp"), nixl.err());
        Run colocatedPd = worker(token, "--role", "colocated", "--set", "enable_pd=true");
        assertEquals(2, colocatedPd.exit());
        assertTrue(colocatedPd.err().contains("leave enable_pd unset"), colocatedPd.err());
    }
}
