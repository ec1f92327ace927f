package lmcache4j.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import lmcache4j.engine.remote.lm.LmConnector;

@Timeout(60)
class ServerCommandTest {
    @Test
    void helpAndBadArguments() {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        assertEquals(0, ServerCommand.run(new String[] {"--help"}, new PrintStream(out), new PrintStream(err)));
        assertTrue(out.toString().contains("usage: ./lmcache4j server"));
        for (String[] bad : new String[][] {{"--port", "x"}, {"--port", "70000"}, {"--bogus"}, {"--max-size", "0"},
                {"--token"}, {"--token="}, {"--max-frame-mb", "0"}, {"--max-connections", "0"}, {"--max-entries", "-3"},
                {"--idle-timeout", "-1"}, {"--stall-timeout", "x"}, {"--stall-timeout", "NaN"}, {"--idle-timeout", "1e99"}}) {
            assertEquals(2, ServerCommand.run(bad, new PrintStream(out), new PrintStream(err)), String.join(" ", bad));
        }
    }

    @Test
    void aPoolLargerThanTheMachinesMemoryIsABadArgument() {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        // 1 PiB: more than any machine this runs on has, and than any x86-64 user address space.
        assertEquals(2, ServerCommand.run(new String[] {"--port=0", "--max-size", "1048576"}, new PrintStream(out),
                new PrintStream(err)));
        assertTrue(err.toString().startsWith("lmcache4j server: --max-size asks for a 1024.0 TiB payload pool, more than "
                + "this machine's "), err.toString());
        assertEquals(1, err.toString().lines().count(), err.toString());
    }

    /** As the MP server and the controller say it: the address, and the option that moves it. */
    @Test
    void aPortInUseIsNamedWithItsOption() throws Exception {
        try (java.net.ServerSocket held = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            ByteArrayOutputStream err = new ByteArrayOutputStream();
            assertEquals(1, ServerCommand.run(new String[] {"--host", "127.0.0.1", "--port", Integer.toString(held.getLocalPort()),
                    "--max-size", "0.01"}, new PrintStream(new ByteArrayOutputStream()), new PrintStream(err, true, StandardCharsets.UTF_8)));
            assertEquals("lmcache4j server: cannot start: address 127.0.0.1:" + held.getLocalPort() + " already in use (--port)",
                    err.toString(StandardCharsets.UTF_8).strip());
        }
    }

    @Test
    void nonsenseSizesAreOneLineAndExitTwo() {
        for (String size : new String[] {"1e-12", "0", "-1", "NaN", "abc", "1e300", "Infinity"}) {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            ByteArrayOutputStream err = new ByteArrayOutputStream();
            assertEquals(2, ServerCommand.run(new String[] {"--port=0", "--max-size", size}, new PrintStream(out),
                    new PrintStream(err)), size + ": " + err);
            assertEquals(1, err.toString().lines().count(), size + ": " + err);
            assertTrue(err.toString().startsWith("lmcache4j server: --max-size"), size + ": " + err);
        }
    }

    @Test
    void servesUntilStopped() throws Exception {
        PipedOutput out = new PipedOutput();
        CountDownLatch stop = new CountDownLatch(1);
        int[] rc = {-1};
        Thread t = Thread.ofPlatform().start(() -> rc[0] = ServerCommand.run(
                new String[] {"--port=0", "--max-size", "0.01", "--token", "tt", "--max-frame-mb", "4"},
                out.stream, System.err, stop));
        int port = out.awaitPort();
        try (LmConnector lm = LmConnector.connect(URI.create("lm://127.0.0.1:" + port + "?token=tt"))) {
            lm.ping().get(10, TimeUnit.SECONDS);
        }
        stop.countDown();
        t.join(10_000);
        assertEquals(0, rc[0]);
        assertTrue(out.text().contains("lm:// server stopped"), out.text());
    }

    /** Collects the command's output and waits for the listening line. */
    private static final class PipedOutput {
        final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        final PrintStream stream = new PrintStream(bytes, true, StandardCharsets.UTF_8);

        synchronized String text() {
            return bytes.toString(StandardCharsets.UTF_8);
        }

        int awaitPort() throws InterruptedException {
            Pattern p = Pattern.compile("listening on 127\\.0\\.0\\.1:(\\d+)");
            for (int i = 0; i < 500; i++) {
                Matcher m = p.matcher(text());
                if (m.find()) {
                    return Integer.parseInt(m.group(1));
                }
                Thread.sleep(20);
            }
            throw new AssertionError("no listening line: " + text());
        }
    }
}
