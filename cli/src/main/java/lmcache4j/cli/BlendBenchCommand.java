package lmcache4j.cli;

import java.io.PrintStream;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Optional;

import lmcache4j.bench.model.BlendBench;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code ./lmcache4j bench blend [--json] [--model DIR] [--ratios R,R] [--documents N] [--document-tokens N] [--runs N]}:
 * CacheBlend on a real transformer (Jlama) at several recompute ratios against the full prefill of
 * the same retrieval prompt ({@link BlendBench}). The launcher adds the Jlama modules for this command.
 */
@Command(name = "blend", description = {"CacheBlend on Jlama: a prompt of documents cached in another order, blended at each "
        + "recompute ratio against its full prefill.",
        "For each ratio: ttft_ms and ttft_full_prefill_ms (medians, runs interleaved), speedup, recomputed_fraction (the full "
                + "prefill's token-layers computed), predicted_speedup (its inverse), and against the full prefill the last "
                + "position's logits_max_abs_diff and kl_divergence and the greedy_agreement of " + BlendBench.DECODE + " tokens. "
                + "Default model: lmcache4j's synthetic Llama (width 256, 12 layers, check layer 1), whose random weights say "
                + "nothing of answer quality."})
public final class BlendBenchCommand implements CliMain.Command {
    private final PrintStream out;
    private final PrintStream err;

    @Option(names = "--json", order = 0, description = "print one JSON object instead of the table")
    private boolean json;

    private Optional<Path> model = Optional.empty();
    private double[] ratios = BlendBench.Settings.DEFAULT_RATIOS;
    private int documents = BlendBench.Settings.DEFAULT_DOCUMENTS;
    private int documentTokens = BlendBench.Settings.DEFAULT_DOCUMENT_TOKENS;
    private int runs = BlendBench.Settings.DEFAULT_RUNS;
    private int checkLayer = 1;
    private long seed = 1;

    BlendBenchCommand(PrintStream out, PrintStream err) {
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

    @Option(names = "--ratios", paramLabel = "R,R", order = 2, description = "recompute ratios, 0 to 1 (default 0,0.05,0.15,0.3,1)")
    private void ratios(String value) {
        String[] parts = value.split(",", -1);
        if (parts.length > 16) {
            throw new IllegalArgumentException("--ratios takes at most 16 ratios");
        }
        ratios = Arrays.stream(parts).mapToDouble(p -> ratio(p.trim())).toArray();
    }

    private static double ratio(String text) {
        double r;
        try {
            r = Double.parseDouble(text);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("--ratios: '" + text + "' is not a number");
        }
        if (!(r >= 0 && r <= 1)) {
            throw new IllegalArgumentException("--ratios: " + text + " is not a share from 0 to 1");
        }
        return r;
    }

    @Option(names = "--documents", paramLabel = "N", order = 3, description = "documents in the prompt (default 6)")
    private void documents(String value) {
        documents = (int) OptionValues.wholeNumber("--documents", value, 1, 64);
    }

    @Option(names = "--document-tokens", paramLabel = "N", order = 4, description = "tokens per document (default 1024)")
    private void documentTokens(String value) {
        documentTokens = (int) OptionValues.wholeNumber("--document-tokens", value, 1, 100_000);
    }

    @Option(names = "--runs", paramLabel = "N", order = 5, description = "blended prefills per ratio (default 1); the full prefill runs half as often (at least once) before the ratios and as often after")
    private void runs(String value) {
        runs = (int) OptionValues.wholeNumber("--runs", value, 1, 100);
    }

    @Option(names = "--check-layer", paramLabel = "L", order = 6, description = "the check layer, blend_check_layers (default 1)")
    private void checkLayer(String value) {
        checkLayer = (int) OptionValues.wholeNumber("--check-layer", value, 0, 1_000);
    }

    @Option(names = "--seed", paramLabel = "S", order = 7, description = "the documents' seed (default 1)")
    private void seed(String value) {
        seed = OptionValues.wholeNumber("--seed", value, Long.MIN_VALUE, Long.MAX_VALUE);
    }

    @Override
    public Integer call() {
        return ModelRuns.blend(model, new BlendBench.Settings(ratios, documents, documentTokens, runs, checkLayer, seed), json,
                out, err);
    }
}
