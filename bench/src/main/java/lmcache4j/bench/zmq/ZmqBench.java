package lmcache4j.bench.zmq;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.ToDoubleFunction;

/**
 * JeroMQ against libzmq in one process, on the measurements the choice between them rests on:
 * connects that stall (JeroMQ as shipped, JeroMQ in lmcache4j's repaired contexts, libzmq), the
 * round trip of the MP server's lookup frames, ROUTER messages per second, admits per second
 * through a CURVE PULL against the clear, and KV events reaching late subscribers of a busy
 * publisher. The side whose library changes is the one lmcache4j would run (server, publisher);
 * the other side is libzmq, as vLLM's and LMCache's Python processes are. Every run measures every
 * library, in turns; figures are the runs' medians, with the load seen before and after.
 */
public final class ZmqBench {
    /**
     * @param connects    connects per library and run
     * @param burst       frames each connecting PUSH queues at once
     * @param roundTrips  lookup round trips per library and run
     * @param routerMessages messages per library and run into the ROUTER
     * @param admits      admits per library, run and mode (CURVE, clear)
     * @param subscribers late subscribers per library and run
     * @param runs        runs
     */
    public record Settings(int connects, int burst, int roundTrips, int routerMessages, long admits, int subscribers,
                           int runs) {
        public static final int DEFAULT_CONNECTS = 1_000;
        public static final int DEFAULT_RUNS = 3;
        /** A prompt of this many tokens in each lookup (eight 256-token chunks). */
        public static final int PROMPT_TOKENS = 2_048;

        public static Settings defaults() {
            return new Settings(DEFAULT_CONNECTS, 2_000, 20_000, 1_000_000, 1L << 20, 20, DEFAULT_RUNS);
        }

        public Settings withConnects(int n) {
            return new Settings(n, burst, roundTrips, routerMessages, admits, subscribers, runs);
        }

        public Settings withRuns(int n) {
            return new Settings(connects, burst, roundTrips, routerMessages, admits, subscribers, n);
        }

        /** Every measurement's count scaled by {@code factor} (a quick check: 0.01), connects and runs aside. */
        public Settings scaled(double factor) {
            return new Settings(connects, burst, Math.max(100, (int) (roundTrips * factor)),
                    Math.max(RouterRate.DEALERS * 100, (int) (routerMessages * factor)),
                    Math.max(CurveIngest.ADMITS_PER_FRAME * 16, (long) (admits * factor)),
                    Math.max(2, (int) (subscribers * factor)), runs);
        }
    }

    /** One run's figures for one library (the connect figures for three: as shipped, repaired, libzmq). */
    public record RunFigures(ConnectStalls.Figures asShipped, ConnectStalls.Figures jeromqConnects,
                             ConnectStalls.Figures libzmqConnects, LookupRoundTrip.Figures jeromqLookup,
                             LookupRoundTrip.Figures libzmqLookup, double jeromqRouterPerSecond, double libzmqRouterPerSecond,
                             CurveIngest.Figures jeromqIngest, CurveIngest.Figures libzmqIngest,
                             LateSubscribers.Figures jeromqEvents, LateSubscribers.Figures libzmqEvents) {
    }

    /** The runs, and what they ran on. */
    public record Result(Settings settings, List<RunFigures> runs, String jeromq, String libzmq, String cpu,
                         String loadBefore, String loadAfter) {
        public double median(ToDoubleFunction<RunFigures> figure) {
            return Stats.median(runs.stream().map(figure::applyAsDouble).toList());
        }

        /** Stalled connects of all runs, and the connects in all. */
        public int stalls(java.util.function.Function<RunFigures, ConnectStalls.Figures> library) {
            return runs.stream().mapToInt(r -> library.apply(r).stalls()).sum();
        }

        public double worstMillis(java.util.function.Function<RunFigures, ConnectStalls.Figures> library) {
            return runs.stream().mapToDouble(r -> library.apply(r).worstMillis()).max().orElse(0);
        }

        public int connects() {
            return settings.connects() * runs.size();
        }
    }

    private ZmqBench() {
    }

    public static Result run(Settings s, PrintStream progress) throws InterruptedException {
        LibZmq z = LibZmq.load();
        String loadBefore = loadAverage();
        byte[][] lookup = LookupRoundTrip.frames(Settings.PROMPT_TOKENS);
        List<byte[]> admits = CurveIngest.frames(s.admits(), 38);
        List<RunFigures> runs = new ArrayList<>();
        String jeromqName = null;
        for (int run = 0; run < s.runs(); run++) {
            try (JeromqLibrary shipped = JeromqLibrary.asShipped(); JeromqLibrary shippedServer = JeromqLibrary.asShipped();
                    JeromqLibrary jeromq = JeromqLibrary.repaired(); JeromqLibrary jeromqServer = JeromqLibrary.repaired();
                    LibzmqLibrary libzmq = new LibzmqLibrary(z); LibzmqLibrary libzmqServer = new LibzmqLibrary(z)) {
                jeromqName = jeromq.describe();
                progress.printf("run %d of %d: connects...%n", run + 1, s.runs());
                ConnectStalls.Figures c0 = ConnectStalls.measure(shippedServer, shipped, s.connects(), s.burst());
                ConnectStalls.Figures c1 = ConnectStalls.measure(jeromqServer, jeromq, s.connects(), s.burst());
                ConnectStalls.Figures c2 = ConnectStalls.measure(libzmqServer, libzmq, s.connects(), s.burst());
                progress.printf("run %d of %d: lookup round trips, ROUTER, CURVE, late subscribers...%n", run + 1, s.runs());
                boolean jeromqFirst = run % 2 == 0; // turns, so that drift does not favour one library
                LookupRoundTrip.Figures l1 = null;
                LookupRoundTrip.Figures l2 = null;
                double r1 = 0;
                double r2 = 0;
                CurveIngest.Figures i1 = null;
                CurveIngest.Figures i2 = null;
                LateSubscribers.Figures e1 = null;
                LateSubscribers.Figures e2 = null;
                for (int turn = 0; turn < 2; turn++) {
                    if ((turn == 0) == jeromqFirst) {
                        l1 = LookupRoundTrip.measure(jeromq, libzmq, lookup, s.roundTrips());
                        r1 = RouterRate.measure(jeromq, libzmq, s.routerMessages());
                        i1 = CurveIngest.measure(jeromq, libzmq, admits);
                        e1 = LateSubscribers.measure(jeromq, libzmq, s.subscribers());
                    } else {
                        l2 = LookupRoundTrip.measure(libzmq, libzmq, lookup, s.roundTrips());
                        r2 = RouterRate.measure(libzmq, libzmq, s.routerMessages());
                        i2 = CurveIngest.measure(libzmq, libzmq, admits);
                        e2 = LateSubscribers.measure(libzmq, libzmq, s.subscribers());
                    }
                }
                RunFigures f = new RunFigures(c0, c1, c2, l1, l2, r1, r2, i1, i2, e1, e2);
                progress.printf("run %d: stalls %d / %d / %d of %d; lookup p50 %.1f / %.1f us; ROUTER %.0f / %.0f msg/s;"
                        + " CURVE %.0f / %.0f admits/s%n", run + 1, c0.stalls(), c1.stalls(), c2.stalls(), s.connects(),
                        l1.p50Micros(), l2.p50Micros(), r1, r2, i1.curveAdmitsPerSecond(), i2.curveAdmitsPerSecond());
                runs.add(f);
            }
        }
        return new Result(s, runs, jeromqName, "libzmq " + z.version(), cpuModel(), loadBefore, loadAverage());
    }

    private static String loadAverage() {
        try {
            String[] parts = Files.readString(Path.of("/proc/loadavg")).trim().split("\\s+");
            return parts[0] + " " + parts[1] + " " + parts[2];
        } catch (IOException e) {
            return "unknown";
        }
    }

    private static String cpuModel() {
        try {
            return Files.readAllLines(Path.of("/proc/cpuinfo")).stream().filter(l -> l.startsWith("model name"))
                    .map(l -> l.substring(l.indexOf(':') + 1).trim()).findFirst().orElse("unknown")
                    + ", " + Runtime.getRuntime().availableProcessors() + " CPUs";
        } catch (IOException e) {
            return "unknown";
        }
    }
}
