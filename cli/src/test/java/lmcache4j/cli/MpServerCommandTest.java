package lmcache4j.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** {@code ./lmcache4j mp-server}'s lower-tier options: bad values are usage errors naming the option; a bad remote cannot start. */
@Timeout(60)
class MpServerCommandTest {
    private record Run(int exit, String out, String err) {
    }

    private static Run run(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int exit = MpServerCommand.run(args, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Run(exit, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    @Test
    void badLowerTierValuesAreUsageErrorsNamingTheOption() {
        for (String[] args : new String[][] {{"--l2-disk-size", "-1"}, {"--l2-disk-size", "zero"},
                {"--l2-staging-size", "0"}, {"--l2-write-queue", "0"}, {"--l2-timeout", "forever"},
                {"--l2-staging-size", "0.001"}, {"--l2-remote", "localhost:6379"}, {"--l2-disk", " "},
                {"--l2-timeout", "200", "--l2-disk", "/tmp/never-created"}}) { // over half of --lock-ttl's 300 s
            Run r = run(args);
            assertEquals(2, r.exit(), String.join(" ", args) + ": " + r.err());
            assertTrue(r.err().contains(args[0]), String.join(" ", args) + " names its option: " + r.err());
        }
    }

    @Test
    void memoryTheMachineDoesNotHaveIsRefusedNamingTheOptionsThatAskForIt() {
        Run pool = run("--l1-size", "100000");
        assertEquals(2, pool.exit(), pool.err());
        assertTrue(pool.err().contains("--l1-size asks for a") && pool.err().contains("more than this machine's"), pool.err());
        Run staging = run("--l1-size", "0.01", "--l2-disk", "/tmp/never-created", "--l2-staging-size", "100000");
        assertEquals(2, staging.exit(), staging.err());
        assertTrue(staging.err().contains("--l2-staging-size ask for") && staging.err().contains("more than this machine's"),
                staging.err());
    }

    /** Not JeroMQ's "Errno 48": the address, and the option that moves it (the HTTP port's default 8080 is easy to hold). */
    @Test
    void aPortInUseIsNamedWithTheOptionThatMovesIt() throws Exception {
        try (ServerSocket held = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            int port = held.getLocalPort();
            Run zmq = run("--port", Integer.toString(port), "--http-port", "-1", "--l1-size", "0.01");
            assertEquals(1, zmq.exit(), zmq.err());
            assertEquals("lmcache4j mp-server: cannot start: address 127.0.0.1:" + port + " already in use (--port)",
                    zmq.err().strip());
            Run http = run("--port", "0", "--http-port", Integer.toString(port), "--l1-size", "0.01");
            assertEquals(1, http.exit(), http.err());
            assertEquals("lmcache4j mp-server: cannot start: address 127.0.0.1:" + port + " already in use (--http-port; -1: no HTTP)",
                    http.err().strip());
        }
    }

    @Test
    void lowerTierOptionsWithoutALowerTierAreUsageErrors() {
        // Small and on any port, in case it started: a server runs until stopped.
        Run one = run("--l2-timeout", "10", "--port", "0", "--http-port", "-1", "--l1-size", "0.01");
        assertEquals(2, one.exit(), one.err());
        assertTrue(one.err().startsWith("lmcache4j mp-server: --l2-timeout shapes a lower tier, but there is none: add "
                + "--l2-disk DIR and/or --l2-remote URL"), one.err());
        Run two = run("--l2-disk-size", "3", "--l2-write-queue", "8", "--port", "0", "--http-port", "-1", "--l1-size", "0.01");
        assertEquals(2, two.exit(), two.err());
        assertTrue(two.err().contains("--l2-disk-size, --l2-write-queue shape a lower tier"), two.err());
    }

    /** The directory's problem, its path said once (it was said three times: wrapper, exception, file). */
    @Test
    void aDiskTierThatCannotBeADirectorySaysWhyOnce(@TempDir Path dir) throws IOException {
        Path file = Files.writeString(dir.resolve("a-file"), "x");
        Run taken = run("--l2-disk", file.toString());
        assertEquals(2, taken.exit(), taken.err());
        assertTrue(taken.err().startsWith("lmcache4j mp-server: --l2-disk " + file + " is a file; name a directory"), taken.err());
        Path blocked = file.resolve("below-a-file");
        Run r = run("--port", "0", "--http-port", "-1", "--l1-size", "0.01", "--l2-disk", blocked.toString());
        assertEquals(1, r.exit(), r.err());
        assertTrue(r.err().contains("cannot create the chunk directory " + blocked + ": "), r.err());
        assertEquals(1, r.err().split(java.util.regex.Pattern.quote(blocked.toString()), -1).length - 1, "the path once: " + r.err());
    }

    @Test
    void aRemoteOfAnUnknownSchemeStopsTheStartWithItsReason() {
        Run r = run("--port", "0", "--http-port", "-1", "--l1-size", "0.01", "--l2-remote", "nosuch://host:1");
        assertEquals(1, r.exit(), r.out() + r.err());
        assertTrue(r.err().contains("lower tier") && r.err().contains("nosuch"), r.err());
    }
}
