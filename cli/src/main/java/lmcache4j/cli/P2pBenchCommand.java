package lmcache4j.cli;

import java.io.PrintStream;
import java.util.Locale;

import lmcache4j.bench.json.ReportJson;
import lmcache4j.bench.p2p.P2pBench;
import lmcache4j.bench.p2p.P2pBench.Result;
import lmcache4j.bench.p2p.P2pBench.Settings;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code ./lmcache4j bench p2p [--json] [--chunks N] [--runs N] [--warmup N] [--connections N]}: chunks
 * fetched from a peer engine through the P2P tier against the transfer channel's own ceiling
 * ({@link P2pBench}); {@link BenchCommand} dispatches here. Exit status 1 when a chunk B holds
 * afterwards differs from A's.
 */
@Command(name = "p2p", description = {"chunks fetched from a peer through the P2P tier against the transfer channel alone.",
        "Engine A serves 256-token Llama-3-8B chunks (32 MiB, bf16) from its CPU tier over its transfer server (the lm://"
                + " server machinery, with a token); engine B looks them up and prefetches them through its P2P tier (tag- and"
                + " CRC32C-checked, written into its CPU tier). The ceiling is an LmConnector with the same connection count"
                + " reading the same chunks from the same server in the same run (target >= " + P2pBenchCommand.TARGET_RATIO
                + " of it); a second server over A without a token shows what the handshake's payload tags cost."
                + " Loopback TCP, both engines in this process; medians of the measured runs."})
public final class P2pBenchCommand implements CliMain.Command {
    /** The fraction of the connector's own throughput the P2P tier should reach. */
    static final double TARGET_RATIO = 0.8;

    private final PrintStream out;
    private final PrintStream err;

    @Option(names = "--json", order = 0, description = "print one JSON object (p2p_get_gbps, ceiling_get_gbps, "
            + "p2p_vs_ceiling, untagged_get_gbps, tagged_vs_untagged, tag_gbps, ...) instead of the table")
    private boolean json;

    private int chunks = Settings.DEFAULT_CHUNKS;
    @Mixin
    private BenchRuns counts = new BenchRuns(Settings.DEFAULT_RUNS, Settings.DEFAULT_WARMUP);
    private int connections = Settings.DEFAULT_CONNECTIONS;

    P2pBenchCommand(PrintStream out, PrintStream err) {
        this.out = out;
        this.err = err;
    }

    @Option(names = "--chunks", paramLabel = "N", order = 1, description = "32 MiB chunks per run (default " + Settings.DEFAULT_CHUNKS + ")")
    private void chunks(String value) {
        chunks = OptionValues.intInRange("--chunks", value, 1, 256);
    }



    @Option(names = "--connections", paramLabel = "N", order = 4, description = "connections to the peer, the tier's "
            + "p2p_connections and the ceiling's pool (default " + Settings.DEFAULT_CONNECTIONS + ")")
    private void connections(String value) {
        connections = OptionValues.intInRange("--connections", value, 1, 64);
    }

    public static int run(String[] args, PrintStream out, PrintStream err) {
        return BenchCommand.run("p2p", args, out, err);
    }

    @Override
    public Integer call() {
        Settings d = Settings.defaults();
        Result r;
        try {
            r = P2pBench.run(new Settings(chunks, counts.runs(), counts.warmup(), connections, d.layers(), d.tokens(), d.kvHeads(),
                    d.headSize()), err);
        } catch (RuntimeException e) {
            return CliMain.failure(err, "bench p2p", "the benchmark failed", e);
        }
        out.println(json ? json(r) : table(r));
        if (r.mismatches() != 0) {
            err.println("lmcache4j bench p2p: FAILED: " + r.mismatches() + " chunks fetched from the peer differ from its own");
            return 1;
        }
        return 0;
    }

    static String table(Result r) {
        Settings s = r.settings();
        StringBuilder sb = new StringBuilder();
        sb.append(String.format(Locale.ROOT, "p2p bench: %d chunks x %d MiB (256 tokens, Llama-3-8B shape), %d connections, "
                + "median of %d runs after %d warmup, loopback%n", s.chunks(), s.chunkBytes() >> 20, s.connections(), s.runs(),
                s.warmup()));
        sb.append(String.format(Locale.ROOT, "%-44s %8.2f GB/s%n", "P2P tier (lookup + prefetch, tag- and CRC-checked)",
                r.p2pGetGbps()));
        sb.append(String.format(Locale.ROOT, "%-44s %8.2f GB/s%n", "LmConnector alone (the channel's ceiling)",
                r.ceilingGetGbps()));
        sb.append(String.format(Locale.ROOT, "%-44s %8.2f   (target >= %.2f)%n", "tier / ceiling", r.ratio(), TARGET_RATIO));
        sb.append(String.format(Locale.ROOT, "%-44s %8.2f GB/s%n", "LmConnector without a token (no tags)",
                r.untaggedGetGbps()));
        sb.append(String.format(Locale.ROOT, "%-44s %8.2f%n", "tagged / untagged connector", r.taggedVsUntagged()));
        sb.append(String.format(Locale.ROOT, "%-44s %8.2f GB/s%n", "payload tag on one core ("
                + lmcache4j.engine.remote.lm.PayloadTag.Algorithm.preferred() + ")", r.tagGbps()));
        sb.append(String.format(Locale.ROOT, "verified   %d chunks in B against A's: %d differ", r.verifiedChunks(),
                r.mismatches()));
        return sb.toString();
    }

    static String json(Result r) {
        Settings s = r.settings();
        ReportJson j = new ReportJson();
        j.number("p2p_get_gbps", r.p2pGetGbps(), 3);
        j.number("ceiling_get_gbps", r.ceilingGetGbps(), 3);
        j.number("p2p_vs_ceiling", r.ratio(), 3);
        j.number("untagged_get_gbps", r.untaggedGetGbps(), 3);
        j.number("tagged_vs_untagged", r.taggedVsUntagged(), 3);
        j.number("tag_gbps", r.tagGbps(), 3);
        j.string("payload_tag", lmcache4j.engine.remote.lm.PayloadTag.Algorithm.preferred().toString());
        j.number("target_ratio", TARGET_RATIO, 2);
        j.integer("chunks", s.chunks());
        j.integer("chunk_bytes", s.chunkBytes());
        j.integer("connections", s.connections());
        j.integer("runs", s.runs());
        j.integer("warmup", s.warmup());
        j.integer("verified_chunks", r.verifiedChunks());
        j.integer("mismatching_chunks", r.mismatches());
        j.integer("rejected_chunks", r.rejected());
        return j.toString();
    }
}
