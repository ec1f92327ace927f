package lmcache4j.cli;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.OptionalDouble;

import lmcache4j.bench.json.ReportJson;
import lmcache4j.bench.trace.Capacity;
import lmcache4j.bench.trace.CapacityPlan;
import lmcache4j.bench.trace.CapacityPlan.Plan;
import lmcache4j.bench.trace.CapacityPlan.Sample;
import lmcache4j.bench.trace.CapacityPlan.Target;
import lmcache4j.bench.trace.ModelShape;
import lmcache4j.bench.trace.PlanChart;
import lmcache4j.bench.trace.Trace;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code ./lmcache4j plan [--trace FILE] [--model SHAPE] [--out DIR] [--json]}: capacity planning
 * from a request trace ({@link CapacityPlan}): the hit rate at every capacity for LRU in one pass,
 * other policies and Belady's MIN at sample capacities, and the GB that reach 50, 80 and 90 % of
 * the infinite cache's hits; a table on stdout and an SVG chart (with the numbers as JSON) in the
 * output directory. Exit status 2 for a usage error (a malformed trace line included), 1 when the
 * plan fails or its files cannot be written.
 */
@Command(name = "plan", description = {"how much KV cache a workload needs: hit rate against capacity from a request "
        + "trace, and the GB of CPU or disk tier that reach 50, 80 and 90%% of what an infinite cache serves.",
        "LRU's hit rate at every capacity in one pass over the trace (stack distances, prefix rule: a block is a hit only "
                + "when every block before it is); the --policies replayed through the engine's tiers at the --samples "
                + "capacities; Belady's offline optimum at the same samples; the infinite cache. Writes capacity-plan.svg "
                + "(the chart) and capacity-plan.json to --out. Default trace: Mooncake's conversation trace, bundled."})
public final class PlanCommand implements CliMain.Command {
    static final String CHART = "capacity-plan.svg";
    static final String NUMBERS = "capacity-plan.json";

    private final PrintStream out;
    private final PrintStream err;

    @Option(names = "--json", order = 0, description = "print the numbers as one JSON object instead of the table")
    private boolean json;

    private final TraceInput input = new TraceInput();
    private ModelShape model = ModelShape.DEFAULT;
    private Path outDir = Path.of("lmcache4j-plan");
    private List<String> policies = CapacityPlan.DEFAULT_POLICIES;
    private List<Capacity> samples = Capacity.parseList(CapacityPlan.DEFAULT_SAMPLES);

    PlanCommand(PrintStream out, PrintStream err) {
        this.out = out;
        this.err = err;
    }

    public static void main(String[] args) {
        CliMain.exit("plan", () -> run(args, System.out, System.err));
    }

    /** Runs {@code plan} with these arguments; returns the exit status. */
    static int run(String[] args, PrintStream out, PrintStream err) {
        return CliMain.execute(new CommandLine(new PlanCommand(out, err)), out, err, args);
    }

    @Option(names = "--trace", paramLabel = "FILE", order = 1, description = "a trace in Mooncake's JSON-lines format, "
            + "plain or gzip (default: the bundled conversation trace)")
    private void trace(String value) {
        input.path(value);
    }

    @Option(names = "--block-tokens", paramLabel = "N", order = 2, description = "tokens per block of the trace's "
            + "hash_ids (default 512, Mooncake's)")
    private void blockTokens(String value) {
        input.blockTokens(OptionValues.intInRange("--block-tokens", value, 1, 1 << 20));
    }

    @Option(names = "--model", paramLabel = "SHAPE", order = 3, description = "the KV shape GB are counted in: llama-3-8b "
            + "(default, bf16, 128 KiB per token), llama-3-70b, mistral-7b, qwen2.5-7b, qwen2.5-72b, or KV bytes per token")
    private void model(String value) {
        model = ModelShape.parse(value);
    }

    @Option(names = "--out", paramLabel = "DIR", order = 4, description = "where " + CHART + " and " + NUMBERS
            + " go (created if missing; default ./lmcache4j-plan)")
    private void out(String value) {
        outDir = Path.of(value);
        if (Files.exists(outDir) && !Files.isDirectory(outDir)) {
            throw new IllegalArgumentException("--out '" + CliText.echo(value) + "' exists and is not a directory");
        }
    }

    @Option(names = "--policies", paramLabel = "LIST", order = 5, description = "cache_policy names replayed at the samples "
            + "(default " + "KV_ADAPTIVE,ARC,S3FIFO; LRU is drawn from its one-pass curve)")
    private void policies(String value) {
        policies = TraceBenchCommand.policyList(value);
    }

    @Option(names = "--samples", paramLabel = "LIST", order = 6, description = "capacities the policies and Belady are "
            + "computed at (default 1%%,2%%,5%%,10%%,20%%,30%%,50%%; N%% of distinct blocks, Nb, NMt, NGB)")
    private void samples(String value) {
        samples = Capacity.parseList(value);
    }

    @Override
    public String missingValue(String option) {
        return option + (option.equals("--trace") ? " needs a file" : option.equals("--out") ? " needs a directory" : " needs a value");
    }

    @Override
    public Integer call() {
        Trace trace;
        try {
            trace = input.read();
        } catch (IllegalArgumentException e) {
            return CliMain.usageError(err, "plan", e.getMessage());
        }
        Plan plan;
        try {
            plan = CapacityPlan.run(new CapacityPlan.Settings(trace, model, policies, samples), err);
        } catch (RuntimeException e) {
            return CliMain.failure(err, "plan", "the plan failed", e);
        }
        String numbers = json(plan);
        try {
            Files.createDirectories(outDir);
            Files.writeString(outDir.resolve(CHART), PlanChart.svg(plan));
            Files.writeString(outDir.resolve(NUMBERS), numbers + "\n");
        } catch (IOException e) {
            return CliMain.failure(err, "plan", "cannot write the chart to " + outDir, e);
        }
        out.println(json ? numbers : table(plan) + "\nchart     " + outDir.resolve(CHART) + "\nnumbers   " + outDir.resolve(NUMBERS));
        return 0;
    }

    static String table(Plan p) {
        Trace t = p.settings().trace();
        ModelShape m = p.settings().model();
        StringBuilder sb = new StringBuilder();
        sb.append("== lmcache4j capacity plan ==\n");
        sb.append(String.format(Locale.ROOT, "trace     %s%n", t.source()));
        sb.append(String.format(Locale.ROOT, "          %,d requests over %,.0f s; %,d full-block lookups; %,d distinct full blocks "
                + "of %d tokens%n", t.requests().size(), t.durationSeconds(), p.lookups(), p.distinctBlocks(), t.blockTokens()));
        sb.append(String.format(Locale.ROOT, "model     %s: %,d bytes of KV per token, %s per block%n", m.name(),
                m.bytesPerToken(), PlanChart.gb(p.gigabytes(1))));
        sb.append(String.format(Locale.ROOT, "infinite  %.2f %% of full-block lookups hit; holding every block takes %s%n",
                100 * p.rate(p.infinite()), PlanChart.gb(p.gigabytes(p.distinctBlocks()))));
        sb.append(String.format(Locale.ROOT, "machine   %s, %d cores%n%n", MachineReport.cpuModel(),
                Runtime.getRuntime().availableProcessors()));
        sb.append("hit rate by capacity (LRU from its one-pass curve, exact; the others replayed through the engine's tiers)\n");
        StringBuilder head = new StringBuilder(String.format(Locale.ROOT, "%9s %8s %10s %8s", "blocks", "%", "GB", "LRU"));
        for (String policy : p.settings().policies()) {
            head.append(String.format(Locale.ROOT, " %12s", policy));
        }
        head.append(String.format(Locale.ROOT, " %8s", "Belady"));
        sb.append(head).append('\n').append("-".repeat(head.length())).append('\n');
        for (Sample s : p.samples()) {
            sb.append(String.format(Locale.ROOT, "%,9d %7.1f%% %10.1f %7.2f%%", s.blocks(), 100.0 * s.blocks() / p.distinctBlocks(),
                    p.gigabytes(s.blocks()), 100 * p.rate(p.lru().hits(s.blocks()))));
            for (long h : s.policies()) {
                sb.append(String.format(Locale.ROOT, " %11.2f%%", 100 * p.rate(h)));
            }
            sb.append(String.format(Locale.ROOT, " %7.2f%%%n", 100 * p.rate(s.belady())));
        }
        sb.append('\n');
        sb.append("capacity for a share of the infinite cache's hits (LRU exact; the others interpolated between samples)\n");
        StringBuilder th = new StringBuilder(String.format(Locale.ROOT, "%-8s %8s %22s", "target", "hit rate", "LRU"));
        for (String policy : p.settings().policies()) {
            th.append(String.format(Locale.ROOT, " %14s", policy));
        }
        th.append(String.format(Locale.ROOT, " %14s", "Belady"));
        sb.append(th).append('\n').append("-".repeat(th.length())).append('\n');
        for (Target target : p.targets()) {
            sb.append(String.format(Locale.ROOT, "%-8s %7.2f%% %22s", String.format(Locale.ROOT, "%.0f%%", 100 * target.fraction()),
                    100 * p.rate(target.hits()), String.format(Locale.ROOT, "%,d b = %s", target.lruBlocks(),
                            PlanChart.gb(p.gigabytes(target.lruBlocks())))));
            for (OptionalDouble b : target.policyBlocks()) {
                sb.append(String.format(Locale.ROOT, " %14s", approx(p, b)));
            }
            sb.append(String.format(Locale.ROOT, " %14s%n", approx(p, target.beladyBlocks())));
        }
        sb.append('\n');
        sb.append("reading it: the capacity is the local tiers' together. A CPU tier alone needs it in memory; with a disk tier\n");
        sb.append("  below a smaller CPU tier, every store goes to both, so the disk tier's size sets the hit rate and the CPU\n");
        sb.append("  tier's size (its own row above) sets how many of those hits are served from memory. '>' : more than the\n");
        sb.append("  largest sample; Belady is the floor no policy can go under.");
        return sb.toString();
    }

    private static String approx(Plan p, OptionalDouble blocks) {
        return blocks.isPresent() ? "~" + PlanChart.gb(p.gigabytes(blocks.getAsDouble()))
                : "> " + PlanChart.gb(p.gigabytes(p.samples().getLast().blocks()));
    }

    static String json(Plan p) {
        ReportJson j = new ReportJson();
        j.string("trace", p.settings().trace().source());
        j.integer("requests", p.settings().trace().requests().size());
        j.integer("block_tokens", p.settings().trace().blockTokens());
        j.integer("full_block_lookups", p.lookups());
        j.integer("distinct_full_blocks", p.distinctBlocks());
        j.string("model", p.settings().model().name());
        j.integer("model_bytes_per_token", p.settings().model().bytesPerToken());
        j.number("infinite_hit_rate", p.rate(p.infinite()), 4);
        List<ReportJson> samples = new ArrayList<>();
        for (Sample s : p.samples()) {
            ReportJson sj = new ReportJson().integer("blocks", s.blocks()).number("gb", p.gigabytes(s.blocks()), 3)
                    .number("lru", p.rate(p.lru().hits(s.blocks())), 4).number("belady", p.rate(s.belady()), 4);
            for (int i = 0; i < s.policies().size(); i++) {
                sj.number(p.settings().policies().get(i).toLowerCase(Locale.ROOT), p.rate(s.policies().get(i)), 4);
            }
            samples.add(sj);
        }
        j.objects("samples", samples);
        List<ReportJson> targets = new ArrayList<>();
        for (Target t : p.targets()) {
            ReportJson tj = new ReportJson().number("fraction_of_infinite", t.fraction(), 2).number("hit_rate", p.rate(t.hits()), 4)
                    .integer("lru_blocks", t.lruBlocks()).number("lru_gb", p.gigabytes(t.lruBlocks()), 3);
            for (int i = 0; i < t.policyBlocks().size(); i++) {
                OptionalDouble b = t.policyBlocks().get(i);
                tj.number(p.settings().policies().get(i).toLowerCase(Locale.ROOT) + "_gb",
                        b.isPresent() ? p.gigabytes(b.getAsDouble()) : Double.NaN, 3);
            }
            tj.number("belady_gb", t.beladyBlocks().isPresent() ? p.gigabytes(t.beladyBlocks().getAsDouble()) : Double.NaN, 3);
            targets.add(tj);
        }
        j.objects("targets", targets);
        List<ReportJson> curve = new ArrayList<>();
        int points = 64;
        for (int i = 0; i <= points; i++) {
            long blocks = Math.max(1, Math.round(Math.exp(i * Math.log(p.distinctBlocks()) / points)));
            curve.add(new ReportJson().integer("blocks", blocks).number("lru", p.rate(p.lru().hits(blocks)), 4));
        }
        j.objects("lru_curve", curve);
        return j.toString();
    }
}
