package lmcache4j.cli;

import java.io.PrintStream;
import java.util.Locale;

import lmcache4j.bench.json.ReportJson;
import lmcache4j.bench.mp.MpBench;
import lmcache4j.bench.mp.MpBench.Result;
import lmcache4j.bench.mp.MpBench.Settings;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code ./lmcache4j bench mp [--json] [--chunks N] [--lookups N] [--runs N] [--warmup N]}: the MP
 * server driven by a client speaking LMCache's frames, against a bare ZeroMQ round trip and memcpy in
 * the same run ({@link MpBench}); {@link BenchCommand} dispatches here. Exit status 1 when a retrieved
 * chunk differs from the stored one.
 */
@Command(name = "mp", description = {"the MP server (mp-server) as vLLM's LMCache MP connector drives it, against bare"
        + " ZeroMQ and memcpy.",
        "One process: an MpServer on loopback and a JeroMQ DEALER speaking LMCache's msgspec frames, registered as a"
                + " Llama-3-8B worker (32 layers, 8 KV heads x 128, bf16, 256-token chunks: 32 MiB objects, world size 1)"
                + " that maps the server's /dev/shm pool. Measures the lookup round trip of a stored prompt (p50, p99)"
                + " against a bare ROUTER echo of the same frames, store and retrieve operations per second (prepare, the"
                + " 32 MiB copy through the pool, commit) and without the copy (the control path), and the pool copies'"
                + " GB/s against MemorySegment.copy of the same bytes between private buffers. Then a second server with"
                + " a disk tier (--l2-disk, a temporary directory) loads the prompt back into its emptied pool, against a"
                + " plain FileChannel read of the same chunk files (both from the page cache). Every retrieved byte is"
                + " checked. Medians of the measured runs."})
public final class MpBenchCommand implements CliMain.Command {
    private final PrintStream out;
    private final PrintStream err;

    @Option(names = "--json", order = 0, description = "print one JSON object (lookup_p50_us, raw_rtt_p50_us, "
            + "lookup_vs_raw_rtt, store_ops_per_s, retrieve_ops_per_s, pool_write_gbps, memcpy_gbps, l2_load_gbps, ...)"
            + " instead of the table")
    private boolean json;

    private int chunks = Settings.DEFAULT_CHUNKS;
    private int lookups = Settings.DEFAULT_LOOKUPS;
    @Mixin
    private BenchRuns counts = new BenchRuns(Settings.DEFAULT_RUNS, Settings.DEFAULT_WARMUP);

    MpBenchCommand(PrintStream out, PrintStream err) {
        this.out = out;
        this.err = err;
    }

    @Option(names = "--chunks", paramLabel = "N", order = 1, description = "32 MiB chunks in the prompt, stored and"
            + " retrieved each run; the pool is N + 4 chunks of /dev/shm (default " + Settings.DEFAULT_CHUNKS + ")")
    private void chunks(String value) {
        chunks = OptionValues.intInRange("--chunks", value, 1, 256);
    }

    @Option(names = "--lookups", paramLabel = "N", order = 2, description = "lookup round trips, and as many bare"
            + " echoes, per run (default " + Settings.DEFAULT_LOOKUPS + ")")
    private void lookups(String value) {
        lookups = OptionValues.intInRange("--lookups", value, 1, 1_000_000);
    }

    public static int run(String[] args, PrintStream out, PrintStream err) {
        return BenchCommand.run("mp", args, out, err);
    }

    @Override
    public Integer call() {
        Result r;
        try {
            r = MpBench.run(Settings.defaults().withCounts(chunks, lookups, counts.runs(), counts.warmup()), err);
        } catch (RuntimeException e) {
            return CliMain.failure(err, "bench mp", "the benchmark failed", e);
        }
        out.println(json ? json(r) : table(r));
        if (r.mismatchedChunks() != 0) {
            err.println("lmcache4j bench mp: FAILED: " + r.mismatchedChunks() + " retrieved chunks differ from the stored ones");
            return 1;
        }
        return 0;
    }

    static String table(Result r) {
        Settings s = r.settings();
        StringBuilder sb = new StringBuilder();
        sb.append(String.format(Locale.ROOT, "mp bench: %d chunks x %d MiB (256 tokens, Llama-3-8B shape), %d lookups per"
                + " run, median of %d runs after %d warmup, loopback, pool %d MiB in /dev/shm%n", s.chunks(),
                s.chunkBytes() >> 20, s.lookups(), s.runs(), s.warmup(), r.poolBytes() >> 20));
        sb.append(String.format(Locale.ROOT, "%-46s %10.1f us  p99 %10.1f us%n", "lookup round trip (MP server)",
                r.lookupP50Us(), r.lookupP99Us()));
        sb.append(String.format(Locale.ROOT, "%-46s %10.1f us  p99 %10.1f us%n", "bare ZeroMQ round trip, same frames",
                r.rawRttP50Us(), r.rawRttP99Us()));
        sb.append(String.format(Locale.ROOT, "%-46s %10.2f%n", "bare / lookup (p50)", r.lookupVsRawRtt()));
        sb.append(String.format(Locale.ROOT, "%-46s %10.1f ops/s%n", "store (prepare + 32 MiB copy + commit)",
                r.storeOpsPerS()));
        sb.append(String.format(Locale.ROOT, "%-46s %10.1f ops/s%n", "retrieve (prepare + 32 MiB copy + commit)",
                r.retrieveOpsPerS()));
        sb.append(String.format(Locale.ROOT, "%-46s %10.1f ops/s%n", "store control path (no copy)",
                r.storeControlOpsPerS()));
        sb.append(String.format(Locale.ROOT, "%-46s %10.1f ops/s%n", "retrieve control path (no copy)",
                r.retrieveControlOpsPerS()));
        sb.append(String.format(Locale.ROOT, "%-46s %10.2f GB/s%n", "pool write (copies into the slots)", r.poolWriteGbps()));
        sb.append(String.format(Locale.ROOT, "%-46s %10.2f GB/s%n", "pool read (copies out of the slots)", r.poolReadGbps()));
        sb.append(String.format(Locale.ROOT, "%-46s %10.2f GB/s%n", "memcpy, same bytes (MemorySegment.copy)",
                r.memcpyGbps()));
        sb.append(String.format(Locale.ROOT, "%-46s %10.2f / %.2f%n", "pool write / memcpy, read / memcpy",
                r.poolWriteVsMemcpy(), r.poolReadVsMemcpy()));
        sb.append(String.format(Locale.ROOT, "%-46s %10.2f GB/s%n", "L2: load from the disk tier into the pool",
                r.l2LoadGbps()));
        sb.append(String.format(Locale.ROOT, "%-46s %10.2f GB/s%n", "L2: plain read of the same chunk files",
                r.l2RawReadGbps()));
        sb.append(String.format(Locale.ROOT, "%-46s %10.2f%n", "L2 load / plain read", r.l2LoadVsRawRead()));
        sb.append(String.format(Locale.ROOT, "verified   %d retrieved chunks against the stored bytes: %d differ",
                r.verifiedChunks(), r.mismatchedChunks()));
        return sb.toString();
    }

    static String json(Result r) {
        Settings s = r.settings();
        ReportJson j = new ReportJson();
        j.number("lookup_p50_us", r.lookupP50Us(), 2);
        j.number("lookup_p99_us", r.lookupP99Us(), 2);
        j.number("raw_rtt_p50_us", r.rawRttP50Us(), 2);
        j.number("raw_rtt_p99_us", r.rawRttP99Us(), 2);
        j.number("lookup_vs_raw_rtt", r.lookupVsRawRtt(), 3);
        j.number("store_ops_per_s", r.storeOpsPerS(), 2);
        j.number("retrieve_ops_per_s", r.retrieveOpsPerS(), 2);
        j.number("store_control_ops_per_s", r.storeControlOpsPerS(), 1);
        j.number("retrieve_control_ops_per_s", r.retrieveControlOpsPerS(), 1);
        j.number("pool_write_gbps", r.poolWriteGbps(), 3);
        j.number("pool_read_gbps", r.poolReadGbps(), 3);
        j.number("memcpy_gbps", r.memcpyGbps(), 3);
        j.number("pool_write_vs_memcpy", r.poolWriteVsMemcpy(), 3);
        j.number("pool_read_vs_memcpy", r.poolReadVsMemcpy(), 3);
        j.number("l2_load_gbps", r.l2LoadGbps(), 3);
        j.number("l2_raw_read_gbps", r.l2RawReadGbps(), 3);
        j.number("l2_load_vs_raw_read", r.l2LoadVsRawRead(), 3);
        j.integer("chunks", s.chunks());
        j.integer("chunk_bytes", s.chunkBytes());
        j.integer("chunk_tokens", s.tokens());
        j.integer("lookups", s.lookups());
        j.integer("prompt_tokens", (long) s.chunks() * s.tokens());
        j.integer("pool_bytes", r.poolBytes());
        j.integer("runs", s.runs());
        j.integer("warmup", s.warmup());
        j.integer("verified_chunks", r.verifiedChunks());
        j.integer("mismatching_chunks", r.mismatchedChunks());
        j.string("method", "lookup_*: the lookup call's round trip alone (request sent to reply received; a new request"
                + " id each time, so the server hashes the prompt), query_prefetch_status, free_lookup_locks and end_session"
                + " untimed; raw_rtt_*: a bare ROUTER echoing [uid, op] to the same frames, alternating with the lookups;"
                + " *_ops_per_s: chunks / the per-chunk pass (prepare + copy + commit; the retrieve's lookup untimed);"
                + " pool_*_gbps: the copies' bytes / their time; memcpy_gbps: MemorySegment.copy of the same bytes between"
                + " two private off-heap buffers; l2_load_gbps: a second server with a disk tier, its pool emptied, the"
                + " prompt's bytes / (lookup sent to the count of query_prefetch_status received); l2_raw_read_gbps: the"
                + " same chunk files read whole with FileChannel into a direct buffer, both from the page cache; each"
                + " figure the median of the runs' (p50 and p99 per run)");
        return j.toString();
    }
}
