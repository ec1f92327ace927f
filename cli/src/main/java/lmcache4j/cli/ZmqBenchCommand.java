package lmcache4j.cli;

import java.io.PrintStream;
import java.util.Locale;
import java.util.function.ToDoubleFunction;

import lmcache4j.bench.json.ReportJson;
import lmcache4j.bench.zmq.ZmqBench;
import lmcache4j.bench.zmq.ZmqBench.Result;
import lmcache4j.bench.zmq.ZmqBench.RunFigures;
import lmcache4j.bench.zmq.ZmqBench.Settings;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code ./lmcache4j bench zmq [--json] [--connects N] [--runs N] [--scale F]}: JeroMQ against
 * libzmq ({@link ZmqBench}); {@link BenchCommand} dispatches here. Needs libzmq
 * ({@code apt-get install libzmq5}); exit status 1 when it is missing or a measurement fails.
 */
@Command(name = "zmq", description = {"JeroMQ (lmcache4j's ZeroMQ) against libzmq (pyzmq's, so vLLM's and LMCache's),"
        + " in one process on loopback.",
        "Connects that stall (a PUSH connects and queues a 2,000-frame burst; a first message after 1 s or more is a"
                + " stall; handshake timer 2 s) for JeroMQ as shipped, JeroMQ in lmcache4j's repaired contexts and"
                + " libzmq; the round trip of the MP server's lookup frames (a 2,048-token prompt) from a libzmq DEALER"
                + " to a ROUTER echo; messages per second into a ROUTER from four libzmq DEALERs; admits per second"
                + " through a PULL decoding LMCache's batched admit frames, CURVE and clear, from a libzmq PUSH; and"
                + " late libzmq subscribers of a PUB publishing as fast as it can (time to the first event, events"
                + " received per second). Medians of the runs; the load average before and after. Needs libzmq (Debian: libzmq5),"
                + " reached through a hand-written binding used by this benchmark only."})
public final class ZmqBenchCommand implements CliMain.Command {
    private final PrintStream out;
    private final PrintStream err;

    @Option(names = "--json", order = 0, description = "print one JSON object (jeromq_as_shipped_stalls_per_1000,"
            + " jeromq_stalls_per_1000, libzmq_stalls_per_1000, lookup_p50_us_jeromq, lookup_p50_us_libzmq,"
            + " router_msgs_per_s_jeromq, curve_admits_per_s_jeromq, ...) instead of the table")
    private boolean json;

    private Settings settings = Settings.defaults();
    private double scale = 1;

    ZmqBenchCommand(PrintStream out, PrintStream err) {
        this.out = out;
        this.err = err;
    }

    @Option(names = "--connects", paramLabel = "N", order = 1, description = "connects per library and run (default "
            + Settings.DEFAULT_CONNECTS + ")")
    private void connects(String value) {
        settings = settings.withConnects(OptionValues.intInRange("--connects", value, 1, 1_000_000));
    }

    @Option(names = "--runs", paramLabel = "N", order = 2, description = "runs (default " + Settings.DEFAULT_RUNS + ")")
    private void runs(String value) {
        settings = settings.withRuns(OptionValues.intInRange("--runs", value, 1, 100));
    }

    @Option(names = "--scale", paramLabel = "F", order = 3, description = "scales the round trips, messages, admits and"
            + " subscribers of each run (0.01 for a quick check; default 1)")
    private void scale(String value) {
        double f = OptionValues.decimal("--scale", value);
        if (!(f > 0 && f <= 10)) {
            throw new picocli.CommandLine.ParameterException(new picocli.CommandLine(this),
                    "--scale must be above 0 and at most 10, got " + value);
        }
        scale = f;
    }

    public static int run(String[] args, PrintStream out, PrintStream err) {
        return BenchCommand.run("zmq", args, out, err);
    }

    @Override
    public Integer call() {
        Result r;
        try {
            r = ZmqBench.run(scale == 1 ? settings : settings.scaled(scale), err);
        } catch (RuntimeException e) {
            return CliMain.failure(err, "bench zmq", "the benchmark failed", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return CliMain.failure(err, "bench zmq", "interrupted", e);
        }
        out.println(json ? json(r) : table(r));
        return 0;
    }

    static String table(Result r) {
        Settings s = r.settings();
        StringBuilder sb = new StringBuilder();
        sb.append(String.format(Locale.ROOT, "zmq bench: %s against %s, %d runs, %s; load %s before, %s after%n",
                r.jeromq(), r.libzmq(), r.runs().size(), r.cpu(), r.loadBefore(), r.loadAfter()));
        sb.append(String.format(Locale.ROOT, "%-44s %12s %12s %12s%n", "", "as shipped", "jeromq", "libzmq"));
        sb.append(String.format(Locale.ROOT, "%-44s %12s %12s %12s%n",
                "connects stalled (" + r.connects() + " each)", r.stalls(RunFigures::asShipped),
                r.stalls(RunFigures::jeromqConnects), r.stalls(RunFigures::libzmqConnects)));
        sb.append(String.format(Locale.ROOT, "%-44s %12.1f %12.1f %12.1f%n", "stalls per 1,000 connects",
                1000.0 * r.stalls(RunFigures::asShipped) / r.connects(), 1000.0 * r.stalls(RunFigures::jeromqConnects)
                        / r.connects(), 1000.0 * r.stalls(RunFigures::libzmqConnects) / r.connects()));
        sb.append(String.format(Locale.ROOT, "%-44s %12.1f %12.1f %12.1f%n", "connect to first message, median ms",
                r.median(f -> f.asShipped().medianMillis()), r.median(f -> f.jeromqConnects().medianMillis()),
                r.median(f -> f.libzmqConnects().medianMillis())));
        sb.append(String.format(Locale.ROOT, "%-44s %12.1f %12.1f %12.1f%n", "connect to first message, worst ms",
                r.worstMillis(RunFigures::asShipped), r.worstMillis(RunFigures::jeromqConnects),
                r.worstMillis(RunFigures::libzmqConnects)));
        row(sb, r, "lookup round trip p50, us (" + Settings.PROMPT_TOKENS + " tokens)", f -> f.jeromqLookup().p50Micros(),
                f -> f.libzmqLookup().p50Micros(), 1);
        row(sb, r, "lookup round trip p99, us", f -> f.jeromqLookup().p99Micros(), f -> f.libzmqLookup().p99Micros(), 1);
        row(sb, r, "ROUTER messages/s (4 DEALERs)", RunFigures::jeromqRouterPerSecond, RunFigures::libzmqRouterPerSecond, 0);
        row(sb, r, "admits/s through a CURVE PULL", f -> f.jeromqIngest().curveAdmitsPerSecond(),
                f -> f.libzmqIngest().curveAdmitsPerSecond(), 0);
        row(sb, r, "admits/s through a clear PULL", f -> f.jeromqIngest().plainAdmitsPerSecond(),
                f -> f.libzmqIngest().plainAdmitsPerSecond(), 0);
        row(sb, r, "CURVE / clear", f -> f.jeromqIngest().curveVsPlain(), f -> f.libzmqIngest().curveVsPlain(), 3);
        row(sb, r, "late subscriber: first event, median ms", f -> f.jeromqEvents().firstEventP50Millis(),
                f -> f.libzmqEvents().firstEventP50Millis(), 2);
        row(sb, r, "late subscriber: first event, worst ms", f -> f.jeromqEvents().firstEventWorstMillis(),
                f -> f.libzmqEvents().firstEventWorstMillis(), 2);
        row(sb, r, "late subscriber: events received per s", f -> f.jeromqEvents().receivedPerSecond(),
                f -> f.libzmqEvents().receivedPerSecond(), 0);
        sb.append(String.format(Locale.ROOT, "(server-side library in each column; the other side libzmq; %d connects,"
                + " %d round trips, %d ROUTER messages, %d admits, %d subscribers per library and run)", s.connects(),
                s.roundTrips(), s.routerMessages(), s.admits(), s.subscribers()));
        return sb.toString();
    }

    private static void row(StringBuilder sb, Result r, String name, ToDoubleFunction<RunFigures> jeromq,
            ToDoubleFunction<RunFigures> libzmq, int decimals) {
        String fmt = "%-44s %12s %12." + decimals + "f %12." + decimals + "f%n";
        sb.append(String.format(Locale.ROOT, fmt, name, "", r.median(jeromq), r.median(libzmq)));
    }

    static String json(Result r) {
        Settings s = r.settings();
        ReportJson j = new ReportJson();
        j.number("jeromq_as_shipped_stalls_per_1000", 1000.0 * r.stalls(RunFigures::asShipped) / r.connects(), 2);
        j.number("jeromq_stalls_per_1000", 1000.0 * r.stalls(RunFigures::jeromqConnects) / r.connects(), 2);
        j.number("libzmq_stalls_per_1000", 1000.0 * r.stalls(RunFigures::libzmqConnects) / r.connects(), 2);
        j.number("jeromq_as_shipped_connect_worst_ms", r.worstMillis(RunFigures::asShipped), 1);
        j.number("jeromq_connect_worst_ms", r.worstMillis(RunFigures::jeromqConnects), 1);
        j.number("libzmq_connect_worst_ms", r.worstMillis(RunFigures::libzmqConnects), 1);
        j.number("jeromq_connect_median_ms", r.median(f -> f.jeromqConnects().medianMillis()), 2);
        j.number("libzmq_connect_median_ms", r.median(f -> f.libzmqConnects().medianMillis()), 2);
        j.number("lookup_p50_us_jeromq", r.median(f -> f.jeromqLookup().p50Micros()), 2);
        j.number("lookup_p50_us_libzmq", r.median(f -> f.libzmqLookup().p50Micros()), 2);
        j.number("lookup_p99_us_jeromq", r.median(f -> f.jeromqLookup().p99Micros()), 2);
        j.number("lookup_p99_us_libzmq", r.median(f -> f.libzmqLookup().p99Micros()), 2);
        j.number("lookup_libzmq_vs_jeromq", r.median(f -> f.libzmqLookup().p50Micros() / f.jeromqLookup().p50Micros()), 3);
        j.number("router_msgs_per_s_jeromq", r.median(RunFigures::jeromqRouterPerSecond), 0);
        j.number("router_msgs_per_s_libzmq", r.median(RunFigures::libzmqRouterPerSecond), 0);
        j.number("router_jeromq_vs_libzmq", r.median(f -> f.jeromqRouterPerSecond() / f.libzmqRouterPerSecond()), 3);
        j.number("curve_admits_per_s_jeromq", r.median(f -> f.jeromqIngest().curveAdmitsPerSecond()), 0);
        j.number("curve_admits_per_s_libzmq", r.median(f -> f.libzmqIngest().curveAdmitsPerSecond()), 0);
        j.number("plain_admits_per_s_jeromq", r.median(f -> f.jeromqIngest().plainAdmitsPerSecond()), 0);
        j.number("plain_admits_per_s_libzmq", r.median(f -> f.libzmqIngest().plainAdmitsPerSecond()), 0);
        j.number("curve_vs_plain_jeromq", r.median(f -> f.jeromqIngest().curveVsPlain()), 3);
        j.number("curve_vs_plain_libzmq", r.median(f -> f.libzmqIngest().curveVsPlain()), 3);
        j.number("curve_jeromq_vs_libzmq", r.median(f -> f.jeromqIngest().curveAdmitsPerSecond()
                / f.libzmqIngest().curveAdmitsPerSecond()), 3);
        j.number("late_first_event_p50_ms_jeromq", r.median(f -> f.jeromqEvents().firstEventP50Millis()), 2);
        j.number("late_first_event_p50_ms_libzmq", r.median(f -> f.libzmqEvents().firstEventP50Millis()), 2);
        j.number("late_first_event_worst_ms_jeromq", r.median(f -> f.jeromqEvents().firstEventWorstMillis()), 2);
        j.number("late_first_event_worst_ms_libzmq", r.median(f -> f.libzmqEvents().firstEventWorstMillis()), 2);
        j.number("late_received_per_s_jeromq", r.median(f -> f.jeromqEvents().receivedPerSecond()), 0);
        j.number("late_received_per_s_libzmq", r.median(f -> f.libzmqEvents().receivedPerSecond()), 0);
        j.integer("connects", s.connects());
        j.integer("runs", r.runs().size());
        j.string("jeromq", r.jeromq());
        j.string("libzmq", r.libzmq());
        j.string("cpu", r.cpu());
        j.string("load_before", r.loadBefore());
        j.string("load_after", r.loadAfter());
        return j.toString();
    }
}
