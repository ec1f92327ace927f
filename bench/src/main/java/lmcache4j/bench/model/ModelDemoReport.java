package lmcache4j.bench.model;

import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

import lmcache4j.bench.json.ReportJson;
import lmcache4j.bench.model.ModelDemo.Served;
import lmcache4j.bench.model.ModelDemo.Source;

/**
 * What the model demo found: time to first token per source of the reused KV against the cold path
 * for the same prompts, hit rate, prefill tokens saved, and whether every warm request's tokens
 * equalled the cold path's.
 *
 * @param model       the model's name
 * @param served      every request, in serving order
 * @param wallNanos   the whole run
 */
public record ModelDemoReport(String model, List<Served> served, long wallNanos) {
    /** One source's figures. */
    public record SourceFigures(Source source, int requests, int promptTokens, int cachedTokens, double ttftMs,
                                double coldTtftMs, double speedup) {
    }

    /** Figures per source, in enum order, for the sources that served a request. */
    public List<SourceFigures> bySource() {
        Map<Source, List<Served>> groups = new EnumMap<>(Source.class);
        for (Served s : served) {
            groups.computeIfAbsent(s.source(), k -> new ArrayList<>()).add(s);
        }
        List<SourceFigures> out = new ArrayList<>();
        groups.forEach((source, list) -> {
            long ttft = 0;
            long cold = 0;
            int prompt = 0;
            int cached = 0;
            for (Served s : list) {
                ttft += s.ttftNanos();
                cold += s.coldTtftNanos();
                prompt += s.promptTokens();
                cached += s.cachedTokens();
            }
            out.add(new SourceFigures(source, list.size(), prompt, cached, ttft / 1e6 / list.size(),
                    cold / 1e6 / list.size(), (double) cold / ttft));
        });
        return out;
    }

    /** Requests whose prompt found a cached prefix, over all requests. */
    public double hitRate() {
        return served.isEmpty() ? 0 : (double) served.stream().filter(s -> s.cachedTokens() > 0).count() / served.size();
    }

    /** Prompt tokens whose KV came from the cache, over all prompt tokens. */
    public double savedFraction() {
        long prompt = served.stream().mapToLong(Served::promptTokens).sum();
        return prompt == 0 ? 0 : (double) served.stream().mapToLong(Served::cachedTokens).sum() / prompt;
    }

    /** Warm requests whose greedy tokens differ from the cold path's. */
    public long tokenMismatches() {
        return served.stream().filter(s -> !s.tokensEqual()).count();
    }

    /** The largest difference of a last-position logit between a warm request and its cold path. */
    public double maxLogitDiff() {
        return served.stream().mapToDouble(Served::maxLogitDiff).max().orElse(0);
    }

    /** Warm requests checked against the cold path. */
    public long verified() {
        return served.stream().filter(s -> s.source() != Source.COLD).count();
    }

    /** Whether the run passed: every warm request's tokens equal the cold path's. */
    public boolean passed() {
        return tokenMismatches() == 0 && verified() > 0;
    }

    /** The store after a prefill, over the prefill's forward pass, summed over the cold requests. */
    public double storeOverhead() {
        long store = 0;
        long compute = 0;
        for (Served s : served) {
            if (s.source() == Source.COLD) {
                store += s.storeNanos();
                compute += s.computeNanos();
            }
        }
        return compute == 0 ? 0 : (double) store / compute;
    }

    /** The text report. */
    public String table() {
        StringBuilder b = new StringBuilder();
        b.append(String.format(Locale.ROOT, "%-26s %8s %14s %14s %14s %9s%n", "request class", "requests", "prompt tokens",
                "TTFT ms (mean)", "cold path ms", "speedup"));
        for (SourceFigures f : bySource()) {
            b.append(String.format(Locale.ROOT, "%-26s %8d %14d %14.1f %14.1f %8.1fx%n", f.source().label(), f.requests(),
                    f.promptTokens(), f.ttftMs(), f.coldTtftMs(), f.speedup()));
        }
        b.append(String.format(Locale.ROOT, "%nrequests %d, hit rate %.1f%%, prefill tokens saved %.1f%% (from the cache: %d of %d)%n",
                served.size(), 100 * hitRate(), 100 * savedFraction(), served.stream().mapToLong(Served::cachedTokens).sum(),
                served.stream().mapToLong(Served::promptTokens).sum()));
        b.append(String.format(Locale.ROOT, "outputs: %d warm requests checked against the cold path, %d with other tokens, "
                + "largest last-position logit difference %s%n", verified(), tokenMismatches(), logitDiff()));
        b.append(String.format(Locale.ROOT, "store after a cold prefill: %.2f%% of the prefill's forward pass%n",
                100 * storeOverhead()));
        b.append(String.format(Locale.ROOT, "run: %.1f s; %s%n", wallNanos / 1e9,
                passed() ? "PASS: every warm request gave the cold path's tokens" : "FAIL: a warm request's tokens differ"));
        return b.toString();
    }

    private String logitDiff() {
        double d = maxLogitDiff();
        return d == 0 ? "0 (bit-identical)" : String.format(Locale.ROOT, "%.3g", d);
    }

    /** The {@code --json} report. */
    public ReportJson json() {
        List<ReportJson> classes = new ArrayList<>();
        for (SourceFigures f : bySource()) {
            classes.add(new ReportJson().string("class", f.source().name().toLowerCase(Locale.ROOT)).integer("requests", f.requests())
                    .integer("prompt_tokens", f.promptTokens()).integer("cached_tokens", f.cachedTokens())
                    .number("ttft_ms", f.ttftMs(), 2).number("cold_path_ttft_ms", f.coldTtftMs(), 2)
                    .number("speedup", f.speedup(), 2));
        }
        List<ReportJson> requests = new ArrayList<>();
        for (Served s : served) {
            requests.add(new ReportJson().string("name", s.name()).string("kind", s.kind().name().toLowerCase(Locale.ROOT))
                    .string("class", s.source().name().toLowerCase(Locale.ROOT)).integer("prompt_tokens", s.promptTokens())
                    .integer("cached_tokens", s.cachedTokens()).number("ttft_ms", s.ttftNanos() / 1e6, 2)
                    .number("cold_path_ttft_ms", s.coldTtftNanos() / 1e6, 2).bool("tokens_equal", s.tokensEqual())
                    .number("max_logit_diff", s.maxLogitDiff(), 9));
        }
        return new ReportJson().string("model", model).integer("requests", served.size())
                .number("hit_rate", hitRate(), 4).number("prefill_tokens_saved", savedFraction(), 4)
                .integer("verified_requests", verified()).integer("token_mismatches", tokenMismatches())
                .number("max_logit_diff", maxLogitDiff(), 9).number("store_overhead", storeOverhead(), 5)
                .number("wall_s", wallNanos / 1e9, 2).bool("passed", passed())
                .objects("classes", classes).objects("per_request", requests);
    }
}
