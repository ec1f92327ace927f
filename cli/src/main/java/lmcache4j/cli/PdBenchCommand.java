package lmcache4j.cli;

import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.Optional;

import lmcache4j.bench.pd.PdBench;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code ./lmcache4j bench pd [--json] [--model DIR] [--lengths L,L] [--runs N] [--interference-s S]
 * [--transfer-only] [--transfer-chunks N] [--transfer-runs N]}:
 * disaggregated prefill's figures ({@link PdBench}). The launcher adds the Jlama modules for this
 * command.
 */
@Command(name = "pd", description = {"disaggregated prefill with Jlama on both sides: time to first token, transfer, "
        + "interference.",
        "Time to first token through PD (a proxy, a prefiller, a decoder: three processes) against one colocated process "
                + "doing prefill and decode (ttft_pd_vs_local, goal <= 1.05 at 8,192 tokens) and the positions the decoder "
                + "computed (decoder_prefill_positions, goal 1); the transfer alone in GB/s against a bare loopback TCP stream "
                + "of the same bytes through one hot buffer (pd_vs_bare_tcp, goal >= 0.8) and through distinct memory per chunk "
                + "(pd_vs_bare_tcp_distinct) and tagged against untagged; and, while long prompts keep "
                + "arriving, the inter-token latency p50/p99 of decoding requests, colocated against disaggregated (prefiller "
                + "and decoder pinned to CPU 0 and CPU 1 with taskset where it works). Default model: lmcache4j's synthetic "
                + "Llama (docs/pd.md)."})
public final class PdBenchCommand implements CliMain.Command {
    private final PrintStream out;
    private final PrintStream err;

    @Option(names = "--json", order = 0, description = "print one JSON object instead of the table")
    private boolean json;

    private Optional<Path> model = Optional.empty();
    private PdBench.Settings settings = PdBench.Settings.defaults();

    PdBenchCommand(PrintStream out, PrintStream err) {
        this.out = out;
        this.err = err;
    }

    @Option(names = "--model", paramLabel = "DIR", order = 1, description = "a Hugging Face model directory Jlama loads "
            + "(default: the synthetic Llama)")
    private void model(String value) {
        if (value.isBlank()) {
            throw new IllegalArgumentException("--model needs a directory");
        }
        model = Optional.of(Path.of(value));
    }

    @Option(names = "--lengths", paramLabel = "L,L", order = 2, description = "prompt lengths of the time-to-first-token "
            + "figure (default 1024,4096,8192)")
    private void lengths(String value) {
        String[] parts = value.split(",", -1);
        if (parts.length > 16) {
            throw new IllegalArgumentException("--lengths takes at most 16 lengths");
        }
        int[] lengths = Arrays.stream(parts).mapToInt(p -> (int) OptionValues.wholeNumber("--lengths", p.trim(), 2,
                1_000_000)).toArray();
        settings = new PdBench.Settings(lengths, settings.runs(), settings.seed(), settings.transferChunks(), settings.transferRuns(),
                settings.interference(), settings.decodeStreams(), settings.decodeTokens(), settings.longPrompt());
    }

    @Option(names = "--runs", paramLabel = "N", order = 3, description = "prompts per length (default 2)")
    private void runs(String value) {
        settings = new PdBench.Settings(settings.lengths(), (int) OptionValues.wholeNumber("--runs", value, 1, 100),
                settings.seed(), settings.transferChunks(), settings.transferRuns(), settings.interference(), settings.decodeStreams(),
                settings.decodeTokens(), settings.longPrompt());
    }

    @Option(names = "--interference-s", paramLabel = "S", order = 4, description = "seconds each interference mode runs "
            + "(default 20)")
    private void interference(String value) {
        settings = new PdBench.Settings(settings.lengths(), settings.runs(), settings.seed(), settings.transferChunks(), settings.transferRuns(),
                Duration.ofSeconds(OptionValues.wholeNumber("--interference-s", value, 1, 3_600)), settings.decodeStreams(),
                settings.decodeTokens(), settings.longPrompt());
    }

    @Option(names = "--long-prompt", paramLabel = "N", order = 5, description = "tokens of the prompts that keep arriving "
            + "during the interference figure (default 4096)")
    private void longPrompt(String value) {
        settings = new PdBench.Settings(settings.lengths(), settings.runs(), settings.seed(), settings.transferChunks(), settings.transferRuns(),
                settings.interference(), settings.decodeStreams(), settings.decodeTokens(),
                (int) OptionValues.wholeNumber("--long-prompt", value, 2, 1_000_000));
    }

    @Option(names = "--transfer-only", order = 6, description = "measure the transfer part alone (no proxy, prefiller or "
            + "decoder process), with the process's CPU time per GiB each way")
    private boolean transferOnly;

    @Option(names = "--transfer-chunks", paramLabel = "N", order = 7, description = "chunks per transfer run (default 64)")
    private void transferChunks(String value) {
        settings = settings.withTransfer((int) OptionValues.wholeNumber("--transfer-chunks", value, 1, 4_096),
                settings.transferRuns());
    }

    @Option(names = "--transfer-runs", paramLabel = "N", order = 8, description = "timed transfer runs, after untimed ones "
            + "of 4,096 chunks in all (default 15)")
    private void transferRuns(String value) {
        settings = settings.withTransfer(settings.transferChunks(), (int) OptionValues.wholeNumber("--transfer-runs", value, 1,
                100));
    }

    @Override
    public Integer call() {
        return transferOnly ? ModelRuns.pdTransferBench(model, settings, json, out, err)
                : ModelRuns.pdBench(model, settings, json, out, err);
    }
}
