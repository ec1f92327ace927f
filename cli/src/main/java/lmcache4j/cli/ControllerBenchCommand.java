package lmcache4j.cli;

import java.io.IOException;
import java.io.PrintStream;
import java.util.Locale;

import lmcache4j.bench.controller.ControllerBench;
import lmcache4j.bench.controller.ControllerBench.Result;
import lmcache4j.bench.controller.ControllerBench.Settings;
import lmcache4j.bench.json.ReportJson;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code ./lmcache4j bench controller [--json] [--ops N] [--entries N] ...}: the cache controller's
 * benchmark ({@link ControllerBench}) as a table, or one JSON object with {@code --json};
 * {@link BenchCommand} dispatches here. Progress goes to stderr, the result to stdout.
 */
@Command(name = "controller", description = {"the cache controller: ingestion vs a bare PULL socket, index bytes per entry, lookup latency.",
        "Admits per second through a controller against a bare JeroMQ PULL socket receiving the same multipart "
                + "pushes in the same run (target ratio >= " + ControllerBench.INGEST_TARGET + "); bytes per (chunk, holder) "
                + "entry of the index at --entries (target <= " + ControllerBench.BYTES_PER_ENTRY_TARGET + "); p50/p99 of a "
                + "lookup of a --prompt-tokens prompt with --lookup-chunks chunks indexed, in-process and over HTTP. "
                + "The default run takes well under a minute; raise --ops, --runs, --entries for bigger ones."})
public final class ControllerBenchCommand implements CliMain.Command {
    private final PrintStream out;
    private final PrintStream err;

    @Option(names = "--json", order = 0, description = "print one JSON object (admit_msgs_per_s, ingest_vs_raw, "
            + "bytes_per_entry, lookup_p50_us, ...) instead of the table")
    private boolean json;

    private long ops = Settings.DEFAULT_INGEST_OPS;
    private int opsPerFrame = Settings.DEFAULT_OPS_PER_FRAME;
    private int framesPerPush = Settings.DEFAULT_FRAMES_PER_PUSH;
    private int runs = Settings.DEFAULT_INGEST_RUNS;
    private long entries = Settings.DEFAULT_MEMORY_ENTRIES;
    private long lookupChunks = Settings.DEFAULT_LOOKUP_FILLER;
    private int promptTokens = Settings.DEFAULT_PROMPT_TOKENS;
    private int lookups = Settings.DEFAULT_LOOKUPS;
    private int httpLookups = Settings.DEFAULT_HTTP_LOOKUPS;

    ControllerBenchCommand(PrintStream out, PrintStream err) {
        this.out = out;
        this.err = err;
    }

    @Option(names = "--ops", paramLabel = "N", order = 1, description = "admits pushed per ingestion run (default " + Settings.DEFAULT_INGEST_OPS + ")")
    private void ops(String v) {
        ops = OptionValues.wholeNumber("--ops", v, 1, 1L << 30);
    }

    @Option(names = "--ops-per-frame", paramLabel = "N", order = 2, description = "admits per BatchedKVOperationMsg (default " + Settings.DEFAULT_OPS_PER_FRAME + ")")
    private void opsPerFrame(String v) {
        opsPerFrame = (int) OptionValues.wholeNumber("--ops-per-frame", v, 1, 1 << 20);
    }

    @Option(names = "--frames-per-push", paramLabel = "N", order = 3, description = "frames per multipart push (default " + Settings.DEFAULT_FRAMES_PER_PUSH + ")")
    private void framesPerPush(String v) {
        framesPerPush = (int) OptionValues.wholeNumber("--frames-per-push", v, 1, 1 << 16);
    }

    @Option(names = "--runs", paramLabel = "N", order = 4, description = "measured ingestion runs, after one warmup (default " + Settings.DEFAULT_INGEST_RUNS + ")")
    private void runs(String v) {
        runs = OptionValues.intAtLeast("--runs", v, 1);
    }

    @Option(names = "--entries", paramLabel = "N", order = 5, description = "index entries for bytes_per_entry (default " + Settings.DEFAULT_MEMORY_ENTRIES + ")")
    private void entries(String v) {
        entries = OptionValues.wholeNumber("--entries", v, 2, Integer.MAX_VALUE);
    }

    @Option(names = "--lookup-chunks", paramLabel = "N", order = 6, description = "chunks indexed during the lookups (default " + Settings.DEFAULT_LOOKUP_FILLER + ")")
    private void lookupChunks(String v) {
        lookupChunks = OptionValues.wholeNumber("--lookup-chunks", v, 0, 1 << 28);
    }

    @Option(names = "--prompt-tokens", paramLabel = "N", order = 7, description = "tokens of the looked-up prompt (default " + Settings.DEFAULT_PROMPT_TOKENS + ")")
    private void promptTokens(String v) {
        promptTokens = (int) OptionValues.wholeNumber("--prompt-tokens", v, 256, 1 << 22);
    }

    @Option(names = "--lookups", paramLabel = "N", order = 8, description = "in-process lookups measured (default " + Settings.DEFAULT_LOOKUPS + ")")
    private void lookups(String v) {
        lookups = OptionValues.intAtLeast("--lookups", v, 1);
    }

    @Option(names = "--http-lookups", paramLabel = "N", order = 9, description = "HTTP lookups measured (default " + Settings.DEFAULT_HTTP_LOOKUPS + ")")
    private void httpLookups(String v) {
        httpLookups = OptionValues.intAtLeast("--http-lookups", v, 1);
    }

    /** Runs {@code bench controller} with these arguments; returns the exit status. */
    public static int run(String[] args, PrintStream out, PrintStream err) {
        return BenchCommand.run("controller", args, out, err);
    }

    @Override
    public Integer call() {
        Result r;
        try {
            r = ControllerBench.run(new Settings(ops, opsPerFrame, framesPerPush, runs, entries, lookupChunks, promptTokens,
                    lookups, httpLookups, 42), err);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return 1;
        } catch (IOException | RuntimeException e) {
            err.println("lmcache4j bench controller: failed: " + CliText.oneLine(e));
            return 1;
        }
        out.println(json ? json(r) : table(r));
        return 0;
    }

    static String json(Result r) {
        return new ReportJson()
                .number("admit_msgs_per_s", r.admitOpsPerSecond(), 0)
                .number("raw_pull_msgs_per_s", r.rawPullOpsPerSecond(), 0)
                .number("ingest_vs_raw", r.ingestVsRaw(), 3)
                .numbers("ingest_vs_raw_runs", r.runRatios(), 3)
                .number("ingest_target", ControllerBench.INGEST_TARGET, 1)
                .number("curve_admit_msgs_per_s", r.curveOpsPerSecond(), 0)
                .number("curve_vs_plain", r.curveVsPlain(), 3)
                .number("bytes_per_entry", r.memory().bytesPerEntry(), 2)
                .number("heap_bytes_per_entry", r.memory().heapBytesPerEntry(), 2)
                .integer("bytes_per_entry_target", ControllerBench.BYTES_PER_ENTRY_TARGET)
                .integer("memory_entries", r.memory().entries())
                .number("memory_fill_s", r.memory().fillSeconds(), 2)
                .number("lookup_p50_us", r.lookup().p50(), 1)
                .number("lookup_p99_us", r.lookup().p99(), 1)
                .number("http_lookup_p50_us", r.httpLookup().p50(), 1)
                .number("http_lookup_p99_us", r.httpLookup().p99(), 1)
                .integer("lookup_prompt_tokens", r.settings().promptTokens())
                .integer("lookup_prompt_chunks", r.promptChunks())
                .integer("lookup_index_entries", r.lookupIndexEntries())
                .integer("ingest_ops", r.settings().ingestOps())
                .integer("ingest_frames", r.ingestFrames())
                .integer("ingest_bytes", r.ingestBytes())
                .integer("ops_per_frame", r.settings().opsPerFrame())
                .integer("frames_per_push", r.settings().framesPerPush())
                .integer("runs", r.settings().ingestRuns())
                .integer("cores", Runtime.getRuntime().availableProcessors())
                .string("msgs", "admit_msgs_per_s counts KV admit operations (each one LMCache KVAdmitMsg's worth) "
                        + "indexed per second; raw_pull_msgs_per_s the same operations' frames received by a bare PULL socket")
                .toString();
    }

    static String table(Result r) {
        return String.format(Locale.ROOT, """
                        cache controller benchmark (%d cores)
                          ingestion   %,.0f admits/s through the controller, %,.0f/s through a bare PULL socket: %.2f (target >= %.1f: %s)
                                      %,d admits in %,d frames (%d a frame, %d frames a push), median of %d runs;
                                      with a deployment secret (CURVE on every socket) %,.0f admits/s: %.2f of plain
                          memory      %.1f bytes per (chunk, holder) entry at %,d entries (heap growth: %.1f) (target <= %d: %s)
                          lookup      %,d-token prompt (%d chunks), %,d entries indexed: p50 %.1f us, p99 %.1f us in-process;
                                      p50 %.1f us, p99 %.1f us over HTTP""",
                Runtime.getRuntime().availableProcessors(), r.admitOpsPerSecond(), r.rawPullOpsPerSecond(), r.ingestVsRaw(),
                ControllerBench.INGEST_TARGET, r.ingestVsRaw() >= ControllerBench.INGEST_TARGET ? "met" : "missed",
                r.settings().ingestOps(), r.ingestFrames(), r.settings().opsPerFrame(), r.settings().framesPerPush(),
                r.settings().ingestRuns(), r.curveOpsPerSecond(), r.curveVsPlain(), r.memory().bytesPerEntry(), r.memory().entries(), r.memory().heapBytesPerEntry(),
                ControllerBench.BYTES_PER_ENTRY_TARGET, r.memory().bytesPerEntry() <= ControllerBench.BYTES_PER_ENTRY_TARGET ? "met" : "missed",
                r.settings().promptTokens(), r.promptChunks(), r.lookupIndexEntries(), r.lookup().p50(), r.lookup().p99(),
                r.httpLookup().p50(), r.httpLookup().p99());
    }
}
