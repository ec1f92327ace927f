package lmcache4j.cli;

import java.io.PrintStream;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Optional;

import lmcache4j.bench.model.TtftBench;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code ./lmcache4j bench ttft [--json] [--model DIR] [--lengths L,L] [--runs N]}: time to first
 * token on a real transformer (Jlama), cold against warm from the CPU and the disk tier, and the
 * overhead of a miss ({@link TtftBench}). The launcher adds the Jlama modules for this command.
 */
@Command(name = "ttft", description = {"time to first token of Jlama prefills, cold against warm from lmcache4j.",
        "For each prompt length: plain Jlama (ttft_cold_ms), the same prompts through lmcache4j while nothing matches "
                + "(ttft_miss_ms, miss_overhead = miss / cold, target <= " + TtftBenchCommand.TARGET_MISS_OVERHEAD + "), "
                + "the store after that prefill over its forward pass (store_overhead), and the whole prompt cached in the CPU "
                + "tier (ttft_warm_ms, speedup = cold / warm) or on disk with the CPU tier emptied (ttft_warm_disk_ms). One "
                + "process, interleaved runs, after a JIT warm-up. Default model: lmcache4j's synthetic Llama (width 256, "
                + "4 layers, GQA 8/2), written on first use."})
public final class TtftBenchCommand implements CliMain.Command {
    static final double TARGET_MISS_OVERHEAD = 1.01;

    private final PrintStream out;
    private final PrintStream err;

    @Option(names = "--json", order = 0, description = "print one JSON object instead of the table")
    private boolean json;

    private Optional<Path> model = Optional.empty();
    private int[] lengths = TtftBench.Settings.DEFAULT_LENGTHS;
    private int runs = TtftBench.Settings.DEFAULT_RUNS;
    private long seed = 1;

    TtftBenchCommand(PrintStream out, PrintStream err) {
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

    @Option(names = "--lengths", paramLabel = "L,L", order = 2, description = "prompt lengths in tokens (default "
            + "1024,4096,8192)")
    private void lengths(String value) {
        String[] parts = value.split(",", -1);
        if (parts.length > 16) {
            throw new IllegalArgumentException("--lengths takes at most 16 lengths");
        }
        lengths = Arrays.stream(parts).mapToInt(p -> (int) OptionValues.wholeNumber("--lengths", p.trim(), 2, 1_000_000)).toArray();
    }

    @Option(names = "--runs", paramLabel = "N", order = 3, description = "cold and miss prompts per length (default "
            + TtftBench.Settings.DEFAULT_RUNS + "; each a fresh prompt)")
    private void runs(String value) {
        runs = (int) OptionValues.wholeNumber("--runs", value, 1, 100);
    }

    @Option(names = "--seed", paramLabel = "S", order = 4, description = "the prompts' seed (default 1)")
    private void seed(String value) {
        seed = OptionValues.wholeNumber("--seed", value, Long.MIN_VALUE, Long.MAX_VALUE);
    }

    @Override
    public Integer call() {
        return ModelRuns.ttft(model, lengths, runs, seed, json, out, err);
    }
}
