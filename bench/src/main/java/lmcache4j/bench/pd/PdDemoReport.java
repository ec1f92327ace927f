package lmcache4j.bench.pd;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

import lmcache4j.bench.json.ReportJson;
import lmcache4j.bench.pd.PdDemo.Served;

/**
 * What {@code demo --model --pd} found: per request, whether PD generated the single process's
 * tokens, how close the last position's logits were, how many positions the decoder computed and
 * the chunks pushed; overall, the time to first token through PD against one process, the proxy's
 * counters, and whether every process closed cleanly.
 *
 * @param model       the model's name
 * @param served      every request, in order
 * @param proxyStatus the proxy's {@code /status} at the end
 * @param unclean     the processes that did not close cleanly (their leak checks), if any
 * @param wallNanos   the whole run
 */
public record PdDemoReport(String model, List<Served> served, Map<String, Object> proxyStatus, List<String> unclean,
                           long wallNanos) {
    /** Requests whose PD tokens differ from the single process's. */
    public long tokenMismatches() {
        return served.stream().filter(s -> !s.tokensEqual()).count();
    }

    /** The largest last-position logit difference between PD and the single process. */
    public double maxLogitDiff() {
        return served.stream().mapToDouble(Served::maxLogitDiff).max().orElse(0);
    }

    /** Requests whose last-position logits are the single process's bit for bit. */
    public long bitIdentical() {
        return served.stream().filter(s -> s.maxLogitDiff() == 0).count();
    }

    /** The most positions a decoder computed for one request. */
    public int maxDecoderPrefillPositions() {
        return served.stream().mapToInt(Served::decoderPrefillPositions).max().orElse(0);
    }

    /** Mean time to first token through PD over the single process's, over every request. */
    public double ttftRatio() {
        double pd = served.stream().mapToDouble(Served::ttftPdMs).sum();
        double local = served.stream().mapToDouble(Served::ttftLocalMs).sum();
        return local == 0 ? 0 : pd / local;
    }

    /** Whether the run passed: every request's tokens equal the single process's, and every process closed cleanly. */
    public boolean passed() {
        return !served.isEmpty() && tokenMismatches() == 0 && unclean.isEmpty();
    }

    /** The report as text. */
    public String table() {
        StringBuilder b = new StringBuilder();
        b.append(String.format(Locale.ROOT, "%-28s %7s %7s %9s %8s %10s %10s %7s%n", "request", "tokens", "pushed",
                "decoder", "tokens", "logits", "PD ttft", "local"));
        b.append(String.format(Locale.ROOT, "%-28s %7s %7s %9s %8s %10s %10s %7s%n", "", "", "chunks", "computed", "equal",
                "max diff", "ms", "ms"));
        for (Served s : served) {
            b.append(String.format(Locale.ROOT, "%-28s %7d %7d %9d %8s %10.2g %10.0f %7.0f%n", s.name(), s.promptTokens(),
                    s.pushedChunks(), s.decoderPrefillPositions(), s.tokensEqual() ? "yes" : "NO", s.maxLogitDiff(), s.ttftPdMs(),
                    s.ttftLocalMs()));
        }
        b.append(String.format(Locale.ROOT, "%n%d requests through the proxy, prefiller and decoder (three processes): tokens "
                        + "equal to one process doing prefill and decode in %d, differ in %d; last-position logits bit-identical "
                        + "in %d (largest difference %.3g); the decoder computed at most %d position(s) of a prompt; time to "
                        + "first token through PD %.2f x one process's (proxy: %s notices, %s timeouts)%n", served.size(),
                served.size() - tokenMismatches(), tokenMismatches(), bitIdentical(), maxLogitDiff(),
                maxDecoderPrefillPositions(), ttftRatio(), proxyStatus.get("notices"), proxyStatus.get("notice_timeouts")));
        if (!unclean.isEmpty()) {
            b.append("processes that did not close cleanly: ").append(unclean).append('\n');
        }
        b.append(passed() ? "PASS" : "FAIL").append(String.format(Locale.ROOT, " (%.1f s)", wallNanos / 1e9));
        return b.toString();
    }

    /** The report as JSON. */
    public String json() {
        List<ReportJson> rows = new ArrayList<>();
        for (Served s : served) {
            rows.add(new ReportJson().string("request", s.name()).integer("prompt_tokens", s.promptTokens())
                    .integer("pushed_chunks", s.pushedChunks()).integer("decoder_prefill_positions", s.decoderPrefillPositions())
                    .bool("tokens_equal", s.tokensEqual()).number("max_logit_diff", s.maxLogitDiff(), 9)
                    .bool("noticed", s.noticed()).number("ttft_pd_ms", s.ttftPdMs(), 2)
                    .number("ttft_local_ms", s.ttftLocalMs(), 2));
        }
        return new ReportJson().string("model", model).integer("requests", served.size())
                .integer("token_mismatches", tokenMismatches()).integer("logits_bit_identical", bitIdentical())
                .number("max_logit_diff", maxLogitDiff(), 9)
                .integer("max_decoder_prefill_positions", maxDecoderPrefillPositions())
                .number("ttft_pd_vs_local", ttftRatio(), 4)
                .integer("notices", ((Number) proxyStatus.getOrDefault("notices", 0L)).longValue())
                .integer("notice_timeouts", ((Number) proxyStatus.getOrDefault("notice_timeouts", 0L)).longValue())
                .bool("closed_cleanly", unclean.isEmpty()).bool("passed", passed())
                .number("wall_s", wallNanos / 1e9, 1).objects("served", rows).toString();
    }
}
