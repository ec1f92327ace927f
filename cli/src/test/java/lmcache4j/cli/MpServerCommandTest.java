package lmcache4j.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

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

    @Test
    void aRemoteOfAnUnknownSchemeStopsTheStartWithItsReason() {
        Run r = run("--port", "0", "--http-port", "-1", "--l1-size", "0.01", "--l2-remote", "nosuch://host:1");
        assertEquals(1, r.exit(), r.out() + r.err());
        assertTrue(r.err().contains("lower tier") && r.err().contains("nosuch"), r.err());
    }
}
