package lmcache4j.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code bench trace} and {@code plan} on a small generated trace in Mooncake's format (conversations
 * that grow turn by turn, under one shared first block): tables, JSON, the chart file, and the usage
 * errors a bad trace or option is.
 */
class TraceCommandsTest {
    @TempDir
    Path dir;
    Path trace;

    private record Run(int exit, String out, String err) {
    }

    private interface Command {
        int run(String[] args, PrintStream out, PrintStream err);
    }

    private static Run run(Command c, String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int exit = c.run(args, new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Run(exit, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    /** 40 conversations of 3 turns, each turn adding 2 blocks; every prompt starts with block 0. */
    @BeforeEach
    void writeTrace() throws IOException {
        List<String> lines = new ArrayList<>();
        int next = 1;
        int[][] conv = new int[40][];
        for (int turn = 0; turn < 3; turn++) {
            for (int c = 0; c < conv.length; c++) {
                int[] prev = conv[c] == null ? new int[]{0} : conv[c];
                int[] ids = java.util.Arrays.copyOf(prev, prev.length + 2);
                ids[prev.length] = next++;
                ids[prev.length + 1] = next++;
                conv[c] = ids;
                StringBuilder sb = new StringBuilder();
                for (int id : ids) {
                    sb.append(sb.isEmpty() ? "" : ", ").append(id);
                }
                lines.add("{\"timestamp\": " + (turn * 1000 + c) + ", \"input_length\": " + ids.length * 512
                        + ", \"output_length\": 20, \"hash_ids\": [" + sb + "]}");
            }
        }
        trace = dir.resolve("t.jsonl");
        Files.write(trace, lines);
    }

    @Test
    void benchTracePrintsTheSweepAndItsJson() {
        Run r = run(TraceBenchCommand::run, "--trace", trace.toString(), "--policies", "lru,KV_ADAPTIVE", "--capacities", "10%,50b");
        assertEquals(0, r.exit(), r.err());
        assertTrue(r.out().contains("== lmcache4j trace replay ==") && r.out().contains("120 requests"), r.out());
        assertTrue(r.out().contains("KV_ADAPTIVE") && r.out().contains("BELADY") && r.out().contains("chunk ops/s"), r.out());
        Run j = run(TraceBenchCommand::run, "--trace", trace.toString(), "--policies", "LRU", "--capacities", "50b", "--json");
        assertEquals(0, j.exit(), j.err());
        assertTrue(j.out().contains("\"requests\": 120") && j.out().contains("\"vs_belady\": ")
                && j.out().contains("\"replay_vs_hashmap\": "), j.out());
    }

    @Test
    void planWritesTheChartAndTheNumbers() throws IOException {
        Path out = dir.resolve("plan");
        Run r = run(PlanCommand::run, "--trace", trace.toString(), "--out", out.toString(), "--samples", "5%,40%",
                "--policies", "KV_ADAPTIVE");
        assertEquals(0, r.exit(), r.err());
        assertTrue(r.out().contains("== lmcache4j capacity plan ==") && r.out().contains("90%"), r.out());
        assertTrue(Files.readString(out.resolve("capacity-plan.svg")).contains("</svg>"));
        assertTrue(Files.readString(out.resolve("capacity-plan.json")).contains("\"targets\": ["));
    }

    @Test
    void badTracesAndOptionsAreUsageErrors() throws IOException {
        Path bad = dir.resolve("bad.jsonl");
        Files.writeString(bad, "{\"timestamp\": 0, \"input_length\": 512, \"output_length\": 1, \"hash_ids\": [1]}\n{oops\n");
        Run r = run(TraceBenchCommand::run, "--trace", bad.toString());
        assertEquals(2, r.exit());
        assertTrue(r.err().contains(bad + " line 2: not a JSON object"), r.err());
        r = run(PlanCommand::run, "--trace", bad.toString(), "--out", dir.toString());
        assertEquals(2, r.exit());
        assertTrue(r.err().contains("line 2"), r.err());
        r = run(TraceBenchCommand::run, "--policies", "LRU,GDSF");
        assertEquals(2, r.exit());
        assertTrue(r.err().contains("unknown cache_policy 'GDSF'; valid: LRU, LFU, FIFO, MRU, S3FIFO, ARC, KV_ADAPTIVE"), r.err());
        r = run(TraceBenchCommand::run, "--capacities", "3M");
        assertEquals(2, r.exit());
        assertTrue(r.err().contains("capacity '3M'"), r.err());
        r = run(TraceBenchCommand::run, "--trace", dir.resolve("missing").toString());
        assertEquals(2, r.exit());
        r = run(TraceBenchCommand::run, "--trace", trace.toString(), "--chunk-tokens", "300");
        assertEquals(2, r.exit());
        assertTrue(r.err().contains("--chunk-tokens 300 must divide the block size 512"), r.err());
        r = run(PlanCommand::run, "--model", "gpt-9");
        assertEquals(2, r.exit());
        assertTrue(r.err().contains("unknown model shape 'gpt-9'"), r.err());
    }

    /** The help shows the defaults, and picocli (which reads '%' as a format) warns about none of it. */
    @Test
    void helpNamesTheOptions() {
        PrintStream systemErr = System.err;
        ByteArrayOutputStream picocliWarnings = new ByteArrayOutputStream();
        System.setErr(new PrintStream(picocliWarnings, true, StandardCharsets.UTF_8));
        Run bench;
        Run plan;
        try {
            bench = run(TraceBenchCommand::run, "--help");
            plan = run(PlanCommand::run, "--help");
        } finally {
            System.setErr(systemErr);
        }
        assertEquals(0, bench.exit());
        String benchHelp = bench.out().replaceAll("\\s+", "");
        assertTrue(bench.out().startsWith("usage: ./lmcache4j bench trace") && bench.out().contains("--capacities")
                && benchHelp.contains("(default" + lmcache4j.bench.trace.Capacity.DEFAULT_SWEEP + ")"), bench.out());
        assertEquals(0, plan.exit());
        assertTrue(plan.out().startsWith("usage: ./lmcache4j plan") && plan.out().contains("--out")
                && plan.out().replaceAll("\\s+", "").contains("(default" + lmcache4j.bench.trace.CapacityPlan.DEFAULT_SAMPLES + ";"),
                plan.out());
        assertEquals("", picocliWarnings.toString(StandardCharsets.UTF_8));
    }
}
