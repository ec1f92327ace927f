package lmcache4j.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import lmcache4j.bench.demo.ServingSimulator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code ./lmcache4j demo} end to end on a tiny configuration (two layers, a few requests): every
 * retrieved byte verified, hits, the JSON keys, and the exit status of bad arguments. No timing
 * assertions.
 */
class DemoCommandTest {
    private record Run(int exit, String out, String err) {
    }

    private static Run run(String... args) {
        return run(ServingSimulator.AfterRetrieve.NOTHING, args);
    }

    private static Run run(ServingSimulator.AfterRetrieve afterRetrieve, String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int exit = DemoCommand.run(args, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8), afterRetrieve);
        return new Run(exit, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    private static final String[] TINY_RUN = {"--requests", "16", "--layers", "2", "--cpu-gb", "0.07", "--seed", "7"};

    private static String[] tinyRun(String... more) {
        String[] args = java.util.Arrays.copyOf(TINY_RUN, TINY_RUN.length + more.length);
        System.arraycopy(more, 0, args, TINY_RUN.length, more.length);
        return args;
    }

    @Test
    void aSingleFlippedByteInARetrievedBlockIsFoundCountedAndFailsTheDemo() {
        FlipRetrievedBytes flip = new FlipRetrievedBytes(1);
        Run r = run(flip, tinyRun("--json"));
        assertEquals(1, flip.flipped(), "a request of the run retrieved KV to damage");
        String json = r.out().strip();
        assertEquals(1, number(json, "mismatches"), "the one flipped byte is found and counted: " + json);
        assertTrue(json.contains("\"passed\": false"), json);
        assertEquals(1, r.exit(), "a mismatching byte makes the demo exit 1: " + r.err());
        assertTrue(r.err().contains("FAILED: 1 of the ") && r.err().contains("retrieved bytes differ from the model"), r.err());
    }

    @Test
    void flippedBytesAreCountedOneByOneAndTheReportSaysFail() {
        FlipRetrievedBytes flip = new FlipRetrievedBytes(3);
        Run r = run(flip, tinyRun("--quiet", "--no-disk"));
        assertEquals(3, flip.flipped());
        assertEquals(1, r.exit(), r.err() + r.out());
        assertTrue(r.out().contains(" 3 mismatching bytes"), r.out());
        assertTrue(r.out().contains("FAIL: 3 of the ") && !r.out().contains("PASS"), r.out());
        assertTrue(r.out().contains("3 of the "), "the problem names the request: " + r.out());
        assertTrue(r.out().lines().anyMatch(l -> l.startsWith("copies     host connector, ") && l.contains(" streaming stores ")),
                "the header says how the engine copies, streaming stores included: " + r.out());
    }

    private static double number(String json, String key) {
        Matcher m = Pattern.compile("\"" + key + "\": (-?[0-9.]+|null)").matcher(json);
        assertTrue(m.find(), "no " + key + " in " + json);
        return m.group(1).equals("null") ? Double.NaN : Double.parseDouble(m.group(1));
    }

    @Test
    void aTinyRunVerifiesEveryRetrievedByteAndReportsItAsJson() {
        Run r = run("--json", "--requests", "16", "--layers", "2", "--cpu-gb", "0.07", "--seed", "7");
        assertEquals(0, r.exit(), r.err() + r.out());
        String json = r.out().strip();
        assertTrue(json.startsWith("{") && json.endsWith("}") && json.lines().count() == 1, json);
        for (String key : new String[] {"requests", "hit_rate", "verified_bytes", "mismatches", "store_gbps",
                "retrieve_gbps", "memcpy_gbps"}) {
            number(json, key);
        }
        assertEquals(16, number(json, "requests"));
        assertEquals(0, number(json, "mismatches"), json);
        assertEquals(0, number(json, "lookup_retrieve_disagreements"), json);
        assertTrue(number(json, "hit_rate") > 0, json);
        assertTrue(number(json, "verified_bytes") > 0, json);
        assertTrue(number(json, "evictions") > 0, "a 0.07 GiB tier (35 chunks of 2 MiB) must evict: " + json);
        assertTrue(json.contains("\"passed\": true"), json);
        assertEquals("", r.err(), "--json draws no progress bar");
    }

    @Test
    void aSecondRunWithTheSameDiskDirectoryServesWhatTheFirstLeftThere(@TempDir Path tmp) throws Exception {
        Path dir = tmp.resolve("disk"); // does not exist yet: --disk creates it
        String[] args = {"--json", "--requests", "16", "--layers", "2", "--cpu-gb", "0.07", "--seed", "7",
            "--disk", dir.toString(), "--disk-gb", "0.5"};
        Run first = run(args);
        assertEquals(0, first.exit(), first.err() + first.out());
        String one = first.out().strip();
        assertTrue(one.contains("\"disk_enabled\": true"), one);
        assertEquals(0, number(one, "mismatches"), one);
        assertEquals(0, number(one, "disk_recovered_chunks"), one);
        assertTrue(number(one, "disk_writes") > 0, "the first run spills chunks to disk: " + one);
        try (var files = Files.list(dir)) {
            assertTrue(files.anyMatch(f -> f.getFileName().toString().endsWith(".lmc")), "chunk files stay in " + dir);
        }

        Run second = run(args);
        assertEquals(0, second.exit(), second.err() + second.out());
        String two = second.out().strip();
        assertEquals(0, number(two, "mismatches"), "chunks read from disk are verified too: " + two);
        assertEquals(0, number(two, "lookup_retrieve_disagreements"), two);
        assertTrue(number(two, "disk_recovered_chunks") > 0, "the second run recovers the first run's chunks: " + two);
        assertTrue(number(two, "disk_reads") > 0, "and serves some of them from disk: " + two);
        assertTrue(number(two, "hit_rate") > number(one, "hit_rate"), "so it reuses more: " + one + "\n" + two);
    }

    @Test
    void twoDemosSharingAnLmServerHitWhatTheFirstStored() throws Exception {
        try (var server = lmcache4j.server.lm.LmCacheServer.start(java.net.InetAddress.getLoopbackAddress(), 0,
                1L << 30, java.util.Optional.empty(), 64 << 20)) {
            String[] args = {"--json", "--requests", "16", "--layers", "2", "--cpu-gb", "0.07", "--seed", "7", "--no-disk",
                "--remote", "lm://127.0.0.1:" + server.port()};
            Run first = run(args);
            assertEquals(0, first.exit(), first.err() + first.out());
            String one = first.out().strip();
            assertTrue(number(one, "remote_puts") > 0, "the first demo stores remotely: " + one);
            Run second = run(args);
            assertEquals(0, second.exit(), second.err() + second.out());
            String two = second.out().strip();
            assertEquals(0, number(two, "mismatches"), "chunks read from the remote are verified too: " + two);
            assertTrue(number(two, "remote_gets") > 0, "the second demo is served what the first stored: " + two);
            assertTrue(number(two, "hit_rate") > number(one, "hit_rate"), one + "\n" + two);
        }
        assertEquals(2, run("--remote", "nowhere").exit());
    }

    @Test
    void aRemoteWithNothingListeningIsReportedUnreachableAndTheDemoExitsThree() {
        String url = "redis://127.0.0.1:1?timeout_ms=500"; // port 1: nothing listens there
        Run r = run("--quiet", "--requests", "6", "--layers", "1", "--cpu-gb", "0.04", "--no-disk", "--remote", url);
        assertEquals(3, r.exit(), r.err() + r.out());
        Matcher remote = Pattern.compile("remote     redis://127\\.0\\.0\\.1:1: unreachable for [0-9.]+ s \\(([^)]+)\\), "
                + "never answered;\n +0 of (\\d+) puts stored").matcher(r.out());
        assertTrue(remote.find(), "the report says unreachable, for how long and why: " + r.out());
        assertTrue(remote.group(1).toLowerCase(java.util.Locale.ROOT).contains("refused"), remote.group(1));
        assertTrue(Integer.parseInt(remote.group(2)) > 0, r.out());
        assertTrue(!r.out().contains("healthy") && !r.out().contains("PASS"), r.out());
        assertTrue(r.out().contains("FAIL: the remote redis://127.0.0.1:1 was unreachable for the whole run"), r.out());
        assertTrue(r.out().contains(" 0 mismatching bytes"), "the local tiers' KV was still right: " + r.out());
        assertEquals("lmcache4j demo: FAILED: the remote redis://127.0.0.1:1 was unreachable for the whole run ("
                + remote.group(1) + "): 0 of " + remote.group(2) + " puts stored and 0 chunks read back", r.err().strip());
    }

    @Test
    void theJsonSaysWhatTheRemoteDidAndTheVerdict() {
        Run r = run("--json", "--requests", "4", "--layers", "1", "--cpu-gb", "0.04", "--no-disk", "--remote",
                "redis://127.0.0.1:1?timeout_ms=500");
        assertEquals(3, r.exit(), r.err());
        String json = r.out().strip();
        assertTrue(json.contains("\"remote_state\": \"unreachable\""), json);
        assertTrue(json.contains("\"remote_ever_answered\": false"), json);
        assertTrue(json.contains("\"verdict\": \"remote_stored_nothing\""), json);
        assertTrue(json.contains("\"passed\": false"), json);
        assertEquals(3, number(json, "exit_status"), json);
        assertEquals(0, number(json, "remote_puts"), json);
        assertTrue(number(json, "remote_failed_puts") > 0, json);
    }

    @Test
    void aRemoteStoreThatCannotBeOpenedIsOneLineAndExitThree() {
        Run r = run("--quiet", "--requests", "2", "--layers", "1", "--cpu-gb", "0.04", "--no-disk", "--remote",
                "fs:///proc/lmcache4j-cannot-exist/shared");
        assertEquals(3, r.exit(), r.err());
        OneLineFailure.assertThat("fs:// under /proc", r.exit(), r.out(), r.err(), 3);
        assertTrue(r.err().startsWith("lmcache4j demo: FAILED: the remote cannot be used: cannot open remote store "
                + "fs:///proc/lmcache4j-cannot-exist/shared"), r.err());
    }

    @Test
    void noDiskLeavesTheDiskTierOutAndBadDiskOptionsExitWith2(@TempDir Path tmp) {
        Run noDisk = run("--json", "--requests", "6", "--layers", "1", "--cpu-gb", "0.04", "--no-disk");
        assertEquals(0, noDisk.exit(), noDisk.err() + noDisk.out());
        assertTrue(noDisk.out().contains("\"disk_enabled\": false"), noDisk.out());
        assertEquals(0, number(noDisk.out(), "disk_writes"), noDisk.out());
        assertEquals(2, run("--disk", tmp.toString(), "--no-disk").exit());
        assertEquals(2, run("--disk-gb", "0").exit());
        Run tiny = run("--disk-gb", "0.001");
        assertEquals(2, tiny.exit());
        assertTrue(tiny.err().contains("holds no chunk file"), tiny.err());
    }

    @Test
    void aDiskDirectoryHoldingSomeoneElsesFilesIsRefusedAndLeftAlone(@TempDir Path tmp) throws Exception {
        java.nio.file.Files.writeString(tmp.resolve("thesis.txt"), "four years of work");
        byte[] data = new byte[5000];
        new java.util.Random(3).nextBytes(data);
        java.nio.file.Files.write(tmp.resolve("data.bin"), data);
        Run r = run("--json", "--requests", "6", "--layers", "1", "--cpu-gb", "0.04", "--disk", tmp.toString());
        assertEquals(2, r.exit(), r.err() + r.out());
        assertEquals(1, r.err().strip().lines().count(), r.err());
        assertTrue(r.err().contains("data.bin, thesis.txt") && r.err().contains("Give --disk a new or empty directory"), r.err());
        assertEquals("four years of work", java.nio.file.Files.readString(tmp.resolve("thesis.txt")));
        assertEquals(-1, java.util.Arrays.mismatch(data, java.nio.file.Files.readAllBytes(tmp.resolve("data.bin"))));
        try (var entries = java.nio.file.Files.list(tmp)) {
            assertEquals(2, entries.count(), "the demo wrote into a directory it does not own");
        }
    }

    @Test
    void theReadableReportSaysWhatWasVerified() {
        Run r = run("--quiet", "--requests", "6", "--layers", "1", "--cpu-gb", "0.04");
        assertEquals(0, r.exit(), r.err() + r.out());
        assertTrue(r.out().contains("== result =="), r.out());
        assertTrue(r.out().contains("0 mismatching bytes"), r.out());
        assertTrue(r.out().contains("PASS: all"), r.out());
        assertTrue(r.out().contains("disk tier  "), "the default run has a disk tier: " + r.out());
        assertTrue(r.out().contains("read back (retrieve hits served from disk"), r.out());
        assertTrue(r.out().lines().anyMatch(l -> l.startsWith("machine    JDK ")), "the brief machine lines: " + r.out());
        assertTrue(r.out().lines().anyMatch(l -> l.startsWith("cuda       ")), "the brief machine lines: " + r.out());
    }

    @Test
    void badArgumentsExitWith2() {
        Run unknown = run("--fast");
        assertEquals(2, unknown.exit());
        assertTrue(unknown.err().contains("unknown option '--fast'"), unknown.err());
        assertEquals("lmcache4j demo: unknown option '--fast' (./lmcache4j demo --help lists the options)",
                unknown.err().strip(), "one line, not the whole usage");
        assertEquals(2, run("--requests", "0").exit());
        assertEquals(2, run("--requests").exit());
        assertEquals(2, run("--cpu-gb", "lots").exit());
        Run tooSmall = run("--cpu-gb", "0.001");
        assertEquals(2, tooSmall.exit());
        assertTrue(tooSmall.err().contains("holds no chunk"), tooSmall.err());
        Run help = run("--help");
        assertEquals(0, help.exit());
        assertTrue(help.out().startsWith("usage: ./lmcache4j demo"), help.out());
    }
}
