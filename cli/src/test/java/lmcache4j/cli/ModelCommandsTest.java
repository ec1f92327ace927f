package lmcache4j.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

import org.junit.jupiter.api.Test;

/**
 * {@code demo --model} and {@code bench ttft} as a user meets them outside the launcher: options
 * they do not take are usage errors, and a JVM without the Jlama modules gets a clear error naming
 * the launcher (this test JVM has none: the cli module requires lmcache4j.jlama only statically).
 * The commands themselves run in the bench module's ModelDemoTest.
 */
class ModelCommandsTest {
    private record Run(int exit, String out, String err) {
    }

    private static Run demo(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int exit = DemoCommand.run(args, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Run(exit, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    private static Run bench(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int exit = BenchCommand.run(args, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Run(exit, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    @Test
    void demoModelRefusesTheOptionsOfTheOtherDemos() {
        for (String[] args : new String[][] {{"--model", "--instances"}, {"--model", "--layers", "4"},
                {"--model", "--requests", "5"}, {"--model", "--hold", "3"}, {"--model", "--disk", "/tmp/x", "--no-disk"},
                {"--model", "--cpu-gb", "0"}}) {
            Run r = demo(args);
            assertEquals(2, r.exit(), String.join(" ", args) + ": " + r.err());
            assertTrue(r.err().contains("lmcache4j demo"), r.err());
        }
    }

    @Test
    void withoutTheJlamaModulesBothCommandsSayHowToRunThem() {
        assertTrue(ModelRuns.missingModules().isPresent(), "this JVM has no lmcache4j.jlama");
        Run demo = demo("--model", "--quiet");
        assertEquals(ModelRuns.EXIT_FAILED, demo.exit());
        assertTrue(demo.err().contains("./lmcache4j"), demo.err());
        assertTrue(demo.err().contains("lmcache4j.jlama"), demo.err());
        Run ttft = bench("ttft", "--lengths", "300");
        assertEquals(ModelRuns.EXIT_FAILED, ttft.exit());
        assertTrue(ttft.err().contains("--add-modules lmcache4j.jlama,jdk.incubator.vector"), ttft.err());
    }

    @Test
    void demoBlendNeedsTheModelAndTakesOnlyItsOptions() {
        Run alone = demo("--blend");
        assertEquals(2, alone.exit(), alone.err());
        assertTrue(alone.err().contains("--blend needs --model"), alone.err());
        for (String[] args : new String[][] {{"--model", "--blend", "--pd"}, {"--model", "--blend", "--layers", "4"},
                {"--model", "--blend", "--no-disk"}}) {
            Run r = demo(args);
            assertEquals(2, r.exit(), String.join(" ", args) + ": " + r.err());
            assertTrue(r.err().contains("--model --blend takes --seed, --json and --quiet only"), r.err());
        }
    }

    @Test
    void benchBlendRefusesBadRatiosCountsAndModel() {
        for (String[] args : new String[][] {{"--ratios", "1.5"}, {"--ratios", "0.1,x"}, {"--ratios", "-0.1"},
                {"--documents", "0"}, {"--document-tokens", "0"}, {"--runs", "0"}, {"--check-layer", "-1"}, {"--model", " "}}) {
            String[] full = new String[args.length + 1];
            full[0] = "blend";
            System.arraycopy(args, 0, full, 1, args.length);
            Run r = bench(full);
            assertEquals(2, r.exit(), String.join(" ", args) + ": " + r.err());
            assertTrue(r.err().contains("bench blend") || r.err().contains(args[0]), r.err());
        }
        Run blend = bench("blend", "--runs", "1");
        assertEquals(ModelRuns.EXIT_FAILED, blend.exit(), "no Jlama modules in this JVM: " + blend.err());
        assertTrue(blend.err().contains("--add-modules lmcache4j.jlama,jdk.incubator.vector"), blend.err());
    }

    @Test
    void benchPdRefusesBadTransferChunksAndRuns() {
        for (String[] bad : new String[][] {{"--transfer-chunks", "0"}, {"--transfer-chunks", "4097"}, {"--transfer-runs", "0"},
                {"--transfer-runs", "x"}}) {
            Run r = bench("pd", "--transfer-only", bad[0], bad[1]);
            assertEquals(2, r.exit(), r.err());
            assertTrue(r.err().contains(bad[0]), r.err());
        }
    }

    @Test
    void benchTtftRefusesBadLengthsAndRuns() {
        assertEquals(2, bench("ttft", "--lengths", "1").exit());
        assertEquals(2, bench("ttft", "--lengths", "300,x").exit());
        assertEquals(2, bench("ttft", "--runs", "0").exit());
        assertEquals(2, bench("ttft", "--model", " ").exit());
    }
}
