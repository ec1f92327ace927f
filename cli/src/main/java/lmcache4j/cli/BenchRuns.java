package lmcache4j.cli;

import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.Option;

/**
 * The {@code --runs} and {@code --warmup} options the benchmarks share (a picocli mixin): each
 * command builds one with its own defaults, which the help shows.
 */
final class BenchRuns {
    /** The most runs of either kind: enough for any median, bounded so a typo cannot run for days. */
    static final int MAX_RUNS = 1_000;

    @Option(names = "--runs", paramLabel = "N", order = 20, converter = Runs.class,
            description = "measured runs (default ${DEFAULT-VALUE})")
    private int runs;

    @Option(names = "--warmup", paramLabel = "N", order = 21, converter = Warmup.class,
            description = "unmeasured runs first (default ${DEFAULT-VALUE})")
    private int warmup;

    BenchRuns(int runs, int warmup) {
        this.runs = runs;
        this.warmup = warmup;
    }

    int runs() {
        return runs;
    }

    int warmup() {
        return warmup;
    }

    /** Parses {@code --runs}: 1 to {@link #MAX_RUNS}. */
    static final class Runs implements ITypeConverter<Integer> {
        @Override
        public Integer convert(String value) {
            return OptionValues.intInRange("--runs", value, 1, MAX_RUNS);
        }
    }

    /** Parses {@code --warmup}: 0 to {@link #MAX_RUNS}. */
    static final class Warmup implements ITypeConverter<Integer> {
        @Override
        public Integer convert(String value) {
            return OptionValues.intInRange("--warmup", value, 0, MAX_RUNS);
        }
    }
}
