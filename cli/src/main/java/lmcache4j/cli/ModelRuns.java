package lmcache4j.cli;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.logging.Level;
import java.util.logging.Logger;

import com.github.tjake.jlama.model.AbstractModel;

import lmcache4j.bench.json.ReportJson;
import lmcache4j.bench.model.BlendBench;
import lmcache4j.bench.model.BlendDemo;
import lmcache4j.bench.model.ModelDemo;
import lmcache4j.bench.model.ModelDemoReport;
import lmcache4j.bench.model.ModelSource;
import lmcache4j.bench.model.ModelWorkload;
import lmcache4j.bench.model.TtftBench;
import lmcache4j.bench.pd.PdBench;
import lmcache4j.bench.pd.PdTransferBench;
import lmcache4j.bench.pd.PdDemo;
import lmcache4j.bench.pd.PdDemoReport;
import lmcache4j.bench.pd.Pinning;
import lmcache4j.engine.remote.lm.PayloadTag;
import lmcache4j.jlama.SyntheticLlama;

/**
 * {@code demo --model [DIR]} and {@code bench ttft}: the commands that run a real transformer
 * (Jlama). They need the modules {@code lmcache4j.jlama} and {@code jdk.incubator.vector}, which the
 * launcher adds for these two commands only (no other command loads Jlama or prints the incubator
 * warning).
 */
final class ModelRuns {
    /** Exit status: a warm request's tokens differed from the cold path's, or the run failed. */
    static final int EXIT_FAILED = 1;

    private ModelRuns() {
    }

    /** Why a model command cannot run in this JVM, or empty when it can. */
    static Optional<String> missingModules() {
        for (String module : List.of("lmcache4j.jlama", "jdk.incubator.vector")) {
            if (ModuleLayer.boot().findModule(module).isEmpty()) {
                return Optional.of("module " + module + " is not in this JVM: run the command through ./lmcache4j, which "
                        + "adds --add-modules lmcache4j.jlama,jdk.incubator.vector and Jlama's jars");
            }
        }
        return Optional.empty();
    }

    /** What a model command does once its model is loaded; {@code scratch} is a temporary directory, deleted after. */
    private interface Body {
        int run(ModelSource source, AbstractModel model, Path scratch);
    }

    /**
     * The frame of both commands: the modules are there, lmcache4j's INFO logs are quiet (the
     * report says the same), the model is resolved (a bad {@code --model} is a usage error) and
     * loaded, and the model and the scratch directory are gone afterwards.
     */
    private static int withModel(String command, Optional<Path> modelDir, PrintStream err, Body body) {
        return withModel(command, () -> ModelSource.resolve(modelDir), err, body);
    }

    private static int withModel(String command, java.util.function.Supplier<ModelSource> resolve, PrintStream err, Body body) {
        String who = "lmcache4j " + command;
        Optional<String> missing = missingModules();
        if (missing.isPresent()) {
            err.println(who + ": " + missing.get());
            return EXIT_FAILED;
        }
        ModelSource source;
        try {
            source = resolve.get();
        } catch (IllegalArgumentException e) {
            return CliMain.usageError(err, command, e.getMessage());
        }
        Logger lmcacheLogs = Logger.getLogger("lmcache4j");
        Level previous = lmcacheLogs.getLevel();
        lmcacheLogs.setLevel(Level.WARNING);
        try (TemporaryDirectory scratch = TemporaryDirectory.create("lmcache4j-model-", err, who)) {
            AbstractModel model;
            try {
                model = source.load();
            } catch (IllegalArgumentException e) { // a config.json or weights Jlama cannot read
                return CliMain.usageError(err, command, e.getMessage());
            }
            try {
                return body.run(source, model, scratch.path());
            } finally {
                model.close();
            }
        } catch (IOException e) {
            err.println(who + ": " + CliText.oneLine(e));
            return EXIT_FAILED;
        } finally {
            lmcacheLogs.setLevel(previous);
        }
    }

    /** The model demo: the report (or JSON) on {@code out}, progress on {@code err}; returns the exit status. */
    static int demo(Optional<Path> modelDir, ModelDemo.Settings base, boolean json, boolean quiet, PrintStream out,
                    PrintStream err) {
        return withModel("demo", modelDir, err, (source, model, scratch) -> {
            ModelDemo.Settings s = base.disk().isEmpty() && base.diskGb() > 0
                    ? new ModelDemo.Settings(base.cpuGb(), Optional.of(scratch.resolve("disk")), base.diskGb(), base.remote(),
                    base.seed(), base.decodeTokens(), base.shape())
                    : base;
            if (!json) {
                out.println("== lmcache4j demo --model: a real transformer's KV through the cache ==");
                out.println(DemoCommand.machine());
                out.printf(Locale.ROOT, "model      %s (%s)%n", source.name(), source.directory());
                out.printf(Locale.ROOT, "engine     Jlama %s, chunk 256 tokens, CPU tier %.2f GiB%s%s%n", jlamaVersion(),
                        s.cpuGb(), s.disk().map(d -> ", disk tier " + d).orElse(", no disk tier"),
                        s.remote().map(r -> ", remote " + r).orElse(""));
                out.println();
                out.flush();
            }
            long started = System.nanoTime();
            boolean progress = !quiet && !json;
            List<ModelDemo.Served> served = ModelDemo.run(s, model, source.name(), (r, done, total) -> {
                if (progress) {
                    err.printf(Locale.ROOT, "[%2d/%d] %-28s %5d tokens, %5d from the cache (%s): first token in %.0f ms%s%n",
                            done, total, r.name(), r.promptTokens(), r.cachedTokens(), r.source().name().toLowerCase(Locale.ROOT),
                            r.ttftNanos() / 1e6, r.source() == ModelDemo.Source.COLD ? ""
                                    : String.format(Locale.ROOT, ", cold path %.0f ms, tokens %s", r.coldTtftNanos() / 1e6,
                                    r.tokensEqual() ? "equal" : "DIFFER"));
                }
            });
            ModelDemoReport report = new ModelDemoReport(source.name(), served, System.nanoTime() - started);
            out.println(json ? report.json() : report.table());
            return report.passed() ? 0 : EXIT_FAILED;
        });
    }

    /**
     * {@code demo --model --pd}: a proxy, a prefiller and a decoder, each its own process; the report
     * (or JSON) on {@code out}, progress on {@code err}; returns the exit status.
     */
    static int pdDemo(Optional<Path> modelDir, long seed, boolean json, boolean quiet, PrintStream out, PrintStream err) {
        return withModel("demo", modelDir, err, (source, model, scratch) -> {
            if (!json) {
                out.println("== lmcache4j demo --model --pd: disaggregated prefill, a real transformer on both sides ==");
                out.println(DemoCommand.machine());
                out.printf(Locale.ROOT, "model      %s (%s)%n", source.name(), source.directory());
                out.printf(Locale.ROOT, "processes  a proxy, a prefiller and a decoder (Jlama %s each), over lmcache4j's PD "
                        + "channel: TCP, the token proved, every frame tagged%n%n", jlamaVersion());
                out.flush();
            }
            boolean progress = !quiet && !json;
            try {
                PdDemoReport report = PdDemo.run(new PdDemo.Settings(seed, 8, shape(), 256L << 20), source, model, scratch,
                        (r, done, total) -> {
                            if (progress) {
                                err.printf(Locale.ROOT, "[%2d/%d] %-28s %5d tokens: %d chunks pushed, the decoder computed %d "
                                                + "position(s); first token through PD in %.0f ms (one process %.0f ms); "
                                                + "tokens %s%n", done, total, r.name(), r.promptTokens(), r.pushedChunks(),
                                        r.decoderPrefillPositions(), r.ttftPdMs(), r.ttftLocalMs(),
                                        r.tokensEqual() ? "equal" : "DIFFER");
                            }
                        });
                out.println(json ? report.json() : report.table());
                return report.passed() ? 0 : EXIT_FAILED;
            } catch (IOException | IllegalStateException e) {
                err.println("lmcache4j demo: the PD processes failed: " + CliText.oneLine(e));
                return EXIT_FAILED;
            }
        });
    }

    /** {@code bench ttft}: the table (or JSON) on {@code out}, progress on {@code err}; returns the exit status. */
    static int ttft(Optional<Path> modelDir, int[] lengths, int runs, long seed, boolean json, PrintStream out,
                    PrintStream err) {
        return withModel("bench ttft", modelDir, err, (source, model, scratch) -> {
            List<TtftBench.Row> rows = TtftBench.run(new TtftBench.Settings(lengths, runs, scratch, seed), model,
                    source.name(), err);
            out.println(json ? ttftJson(source, rows) : ttftTable(source, rows));
            return 0;
        });
    }

    /** {@code demo --model --blend}: the report (or JSON) on {@code out}, progress on {@code err}; returns the exit status. */
    static int blendDemo(Optional<Path> modelDir, long seed, boolean json, boolean quiet, PrintStream out, PrintStream err) {
        return withModel("demo", () -> ModelSource.resolve(modelDir, SyntheticLlama.blend(), "synthetic-llama-256x12"), err,
                (source, model, scratch) -> {
                    BlendDemo.Settings s = BlendDemo.Settings.defaults(seed);
                    if (!json) {
                        out.println("== lmcache4j demo --model --blend: CacheBlend on a real transformer ==");
                        out.println(DemoCommand.machine());
                        out.printf(Locale.ROOT, "model      %s (%s), Jlama %s%n%n", source.name(), source.directory(), jlamaVersion());
                        out.flush();
                    }
                    boolean progress = !quiet && !json;
                    List<BlendDemo.Served> served = BlendDemo.run(s, model, source.name(), r -> {
                        if (progress) {
                            err.printf(Locale.ROOT, "%-22s %5d tokens: full %.0f ms, prefix caching %.0f ms, blended %.0f ms; "
                                    + "ratio 1 %s%n", r.name(), r.promptTokens(), r.fullMs(), r.prefixMs(), r.blendMs(),
                                    r.ratioOneIdentical() ? "identical" : "DIFFERS");
                        }
                    });
                    out.println(json ? BlendDemo.json(source.name(), s, served) : BlendDemo.table(source.name(), s, served));
                    return BlendDemo.passed(served) ? 0 : EXIT_FAILED;
                });
    }

    /** {@code bench blend}: the table (or JSON) on {@code out}, progress on {@code err}; returns the exit status. */
    static int blend(Optional<Path> modelDir, BlendBench.Settings settings, boolean json, PrintStream out, PrintStream err) {
        return withModel("bench blend", () -> ModelSource.resolve(modelDir, SyntheticLlama.blend(), "synthetic-llama-256x12"), err,
                (source, model, scratch) -> {
                    BlendBench.Result r;
                    try {
                        r = BlendBench.run(settings, model, source.name(), err);
                    } catch (IllegalArgumentException e) {
                        return CliMain.usageError(err, "bench blend", e.getMessage());
                    }
                    out.println(json ? blendJson(source, r) : blendTable(source, r));
                    return 0;
                });
    }

    private static String blendTable(ModelSource source, BlendBench.Result r) {
        StringBuilder b = new StringBuilder();
        b.append(String.format(Locale.ROOT, "model %s, Jlama %s, %d layers, check layer %d; prompt of %,d tokens; CPU %s, %d CPUs%n",
                source.name(), jlamaVersion(), r.layers(), r.checkLayer(), r.promptTokens(), Pinning.cpuModel(),
                Runtime.getRuntime().availableProcessors()));
        b.append(String.format(Locale.ROOT, "%6s %10s %10s %8s %10s %10s %12s %10s %8s%n", "ratio", "blend ms", "full ms", "speedup",
                "predicted", "computed", "logits diff", "KL", "greedy"));
        for (BlendBench.Row row : r.rows()) {
            b.append(String.format(Locale.ROOT, "%6.2f %10.1f %10.1f %8.2f %10.2f %10.3f %12.4g %10.3g %8.2f%n", row.ratio(),
                    row.ttftMs(), row.ttftFullMs(), row.speedup(), row.predictedSpeedup(), row.recomputedFraction(),
                    row.logitsMaxAbsDiff(), row.klDivergence(), row.greedyAgreement()));
        }
        if (source.synthetic()) {
            b.append("The synthetic model's weights are random: the deviation columns say nothing of answer quality (--model DIR).");
        }
        return b.toString().stripTrailing();
    }

    private static String blendJson(ModelSource source, BlendBench.Result r) {
        // The blend at ratio 1 computes what the full prefill does, layer by layer instead of batch by batch:
        // against it, a speedup counts the compute saved only.
        Optional<Double> allRecomputed = r.rows().stream().filter(row -> row.ratio() == 1.0).map(BlendBench.Row::ttftMs).findFirst();
        List<ReportJson> ratios = r.rows().stream().map(row -> new ReportJson().number("ratio", row.ratio(), 4)
                .number("ttft_ms", row.ttftMs(), 2).number("ttft_full_prefill_ms", row.ttftFullMs(), 2)
                .number("speedup", row.speedup(), 3)
                .number("speedup_over_ratio_1", allRecomputed.map(ms -> ms / row.ttftMs()), 3)
                .number("recomputed_fraction", row.recomputedFraction(), 5)
                .number("predicted_speedup", row.predictedSpeedup(), 3).integer("reused_tokens", row.reusedTokens())
                .integer("recomputed_tokens", row.recomputedTokens())
                .number("logits_max_abs_diff", row.logitsMaxAbsDiff(), 8).number("kl_divergence", row.klDivergence(), 8)
                .number("greedy_agreement", row.greedyAgreement(), 4)).toList();
        return new ReportJson().string("model", source.name()).bool("synthetic_weights", source.synthetic())
                .string("jlama", jlamaVersion()).string("cpu", Pinning.cpuModel())
                .integer("cpus", Runtime.getRuntime().availableProcessors()).integer("layers", r.layers())
                .integer("check_layer", r.checkLayer()).integer("prompt_tokens", r.promptTokens())
                .integer("greedy_tokens", BlendBench.DECODE).objects("ratios", ratios).toString();
    }

    /** {@code bench pd}: the table (or JSON) on {@code out}, progress on {@code err}; returns the exit status. */
    static int pdBench(Optional<Path> modelDir, PdBench.Settings settings, boolean json, PrintStream out, PrintStream err) {
        return withModel("bench pd", modelDir, err, (source, model, scratch) -> {
            PdBench.Result r;
            try {
                r = PdBench.run(settings, source, model, scratch, err);
            } catch (IOException | IllegalStateException e) {
                err.println("lmcache4j bench pd: " + CliText.oneLine(e));
                if ("1".equals(System.getenv(CliMain.TRACES_VARIABLE))) {
                    e.printStackTrace(err);
                }
                return EXIT_FAILED;
            } catch (IllegalArgumentException e) {
                return CliMain.usageError(err, "bench pd", e.getMessage());
            }
            out.println(json ? pdJson(source, r) : pdTable(source, r));
            return 0;
        });
    }

    static int pdTransferBench(Optional<Path> modelDir, PdBench.Settings settings, boolean json, PrintStream out, PrintStream err) {
        return withModel("bench pd", modelDir, err, (source, model, scratch) -> {
            double loadBefore = PdBench.loadAverage();
            PdTransferBench.Result x;
            try {
                x = PdBench.transferOnly(settings, source, model, err);
            } catch (IOException | IllegalStateException e) {
                err.println("lmcache4j bench pd: " + CliText.oneLine(e));
                return EXIT_FAILED;
            }
            double loadAfter = PdBench.loadAverage();
            String cpu = Pinning.cpuModel();
            int cpus = Runtime.getRuntime().availableProcessors();
            out.println(json ? new ReportJson().string("model", source.name()).string("cpu", cpu).integer("cpus", cpus)
                    .number("load_before", loadBefore, 2).number("load_after", loadAfter, 2)
                    .integer("transfer_runs", settings.transferRuns()).object("transfer", transferJson(x)).toString()
                    : String.format(Locale.ROOT, "model %s; CPU %s, %d CPUs; load %.2f before, %.2f after; %d runs%n%s",
                    source.name(), cpu, cpus, loadBefore, loadAfter, settings.transferRuns(), transferLine(x)).strip());
            return 0;
        });
    }

    private static String transferLine(PdTransferBench.Result x) {
        PayloadTag.Algorithm tags = PayloadTag.Algorithm.preferred(); // both ends are this process: what it prefers
        return String.format(Locale.ROOT, "transfer of %d MiB (%s tags): PD %.2f GB/s, bare TCP %.2f GB/s (%.3f), "
                + "bare TCP into distinct memory %.2f GB/s (%.3f); untagged PD %.2f GB/s (tagged/untagged %.3f); "
                + "CPU ms per GiB: PD %.0f, untagged %.0f, bare %.0f, distinct %.0f%n", x.bytes() >> 20, tags, x.pdGbps(),
                x.bareGbps(), x.pdVsBare(), x.bareDistinctGbps(), x.pdVsBareDistinct(), x.unkeyedGbps(),
                x.taggedVsUntagged(), x.cpuMsPerGib().pd(), x.cpuMsPerGib().unkeyed(), x.cpuMsPerGib().bare(),
                x.cpuMsPerGib().bareDistinct());
    }

    private static ReportJson transferJson(PdTransferBench.Result x) {
        // both ends are this process, so their handshake chose what it prefers
        return new ReportJson().integer("bytes", x.bytes())
                .string("payload_tag", PayloadTag.Algorithm.preferred().toString()).number("pd_gbps", x.pdGbps(), 3)
                .number("bare_tcp_gbps", x.bareGbps(), 3).number("pd_vs_bare_tcp", x.pdVsBare(), 4)
                .number("bare_tcp_distinct_gbps", x.bareDistinctGbps(), 3)
                .number("pd_vs_bare_tcp_distinct", x.pdVsBareDistinct(), 4)
                .number("untagged_gbps", x.unkeyedGbps(), 3).number("tagged_vs_untagged", x.taggedVsUntagged(), 4)
                .number("pd_cpu_ms_per_gib", x.cpuMsPerGib().pd(), 0).number("untagged_cpu_ms_per_gib", x.cpuMsPerGib().unkeyed(), 0)
                .number("bare_tcp_cpu_ms_per_gib", x.cpuMsPerGib().bare(), 0)
                .number("bare_tcp_distinct_cpu_ms_per_gib", x.cpuMsPerGib().bareDistinct(), 0);
    }

    private static String pdTable(ModelSource source, PdBench.Result r) {
        StringBuilder b = new StringBuilder();
        b.append(String.format(Locale.ROOT, "model %s, Jlama %s; CPU %s, %d CPUs; load %.2f before, %.2f after%n", source.name(),
                jlamaVersion(), r.cpu(), r.cpus(), r.loadBefore(), r.loadAfter()));
        b.append(String.format(Locale.ROOT, "%8s %12s %12s %10s %10s %12s%n", "tokens", "PD ttft ms", "local ms", "PD/local",
                "decoder", "push wait"));
        for (PdBench.TtftRow t : r.ttft()) {
            b.append(String.format(Locale.ROOT, "%8d %12.1f %12.1f %10.3f %10d %10.2f ms%n", t.tokens(), t.pdMs(), t.localMs(),
                    t.ratio(), t.decoderPrefillPositions(), t.pushWaitMs()));
        }
        b.append(transferLine(r.transfer()));
        b.append(String.format(Locale.ROOT, "inter-token latency while long prompts arrive (%s): colocated p50 %.1f ms p99 %.1f ms;"
                + " disaggregated p50 %.1f ms p99 %.1f ms", r.pinning().map(p -> "pinned with " + p).orElse("not pinned"),
                r.colocated().p50Ms(), r.colocated().p99Ms(), r.disaggregated().p50Ms(), r.disaggregated().p99Ms()));
        return b.toString();
    }

    private static String pdJson(ModelSource source, PdBench.Result r) {
        List<ReportJson> lengths = r.ttft().stream().map(t -> new ReportJson().integer("tokens", t.tokens())
                .number("ttft_pd_ms", t.pdMs(), 2).number("ttft_local_ms", t.localMs(), 2)
                .number("ttft_pd_vs_local", t.ratio(), 4).integer("decoder_prefill_positions", t.decoderPrefillPositions())
                .number("push_wait_ms", t.pushWaitMs(), 3)).toList();
        ReportJson transfer = transferJson(r.transfer());
        ReportJson itl = new ReportJson().string("pinning", r.pinning().orElse("none"))
                .object("colocated", itlJson(r.colocated())).object("disaggregated", itlJson(r.disaggregated()));
        return new ReportJson().string("model", source.name()).string("jlama", jlamaVersion()).string("cpu", r.cpu())
                .integer("cpus", r.cpus()).number("load_before", r.loadBefore(), 2).number("load_after", r.loadAfter(), 2)
                .objects("lengths", lengths).object("transfer", transfer).object("interference", itl).toString();
    }

    private static ReportJson itlJson(PdBench.Itl i) {
        return new ReportJson().number("itl_p50_ms", i.p50Ms(), 2).number("itl_p99_ms", i.p99Ms(), 2)
                .integer("decode_steps", i.samples()).integer("decode_requests", i.decodeRequests())
                .integer("long_prompts", i.longPrompts());
    }

    private static String ttftTable(ModelSource source, List<TtftBench.Row> rows) {
        StringBuilder b = new StringBuilder();
        b.append(String.format(Locale.ROOT, "model %s, Jlama %s, %d CPUs%n", source.name(), jlamaVersion(),
                Runtime.getRuntime().availableProcessors()));
        b.append(String.format(Locale.ROOT, "%8s %10s %10s %10s %10s %12s %9s %9s %9s %10s%n", "tokens", "cold ms", "miss ms",
                "miss ovh", "added ms", "warm ms", "disk ms", "speedup", "from disk", "store ovh"));
        for (TtftBench.Row r : rows) {
            b.append(String.format(Locale.ROOT, "%8d %10.1f %10.1f %10.4f %10.2f %12.2f %9.2f %8.1fx %8.1fx %10.5f%n",
                    r.tokens(), r.coldMs(), r.missMs(), r.missOverhead(), r.missAddedMs(), r.warmMs(), r.warmDiskMs(),
                    r.speedup(), r.speedupDisk(), r.storeOverhead()));
        }
        b.append(String.format(Locale.ROOT, "miss_overhead over every length: %.4f (time through lmcache4j on a miss over plain "
                + "Jlama, the same prompts; target <= %.2f)", TtftBench.missOverhead(rows), TtftBenchCommand.TARGET_MISS_OVERHEAD));
        return b.toString();
    }

    private static String ttftJson(ModelSource source, List<TtftBench.Row> rows) {
        List<ReportJson> lengths = rows.stream().map(r -> new ReportJson().integer("tokens", r.tokens())
                .number("ttft_cold_ms", r.coldMs(), 2).number("ttft_miss_ms", r.missMs(), 2)
                .number("miss_overhead", r.missOverhead(), 4).number("miss_added_ms", r.missAddedMs(), 3)
                .number("miss_added_fraction", r.missAddedMs() / r.coldMs(), 6)
                .number("ttft_warm_ms", r.warmMs(), 2).number("ttft_warm_disk_ms", r.warmDiskMs(), 2)
                .integer("cached_tokens", r.cachedTokens()).number("speedup", r.speedup(), 2)
                .number("speedup_disk", r.speedupDisk(), 2)
                .number("store_overhead", r.storeOverhead(), 5)).toList();
        return new ReportJson().string("model", source.name()).string("jlama", jlamaVersion())
                .integer("cpus", Runtime.getRuntime().availableProcessors())
                .number("miss_overhead", TtftBench.missOverhead(rows), 4).objects("lengths", lengths).toString();
    }

    private static String jlamaVersion() {
        return ModuleLayer.boot().findModule("jlama.core").flatMap(m -> m.getDescriptor().rawVersion()).orElse("0.8.4");
    }

    /** The demo's workload shape. */
    static ModelWorkload.Shape shape() {
        return ModelWorkload.Shape.demo();
    }
}
