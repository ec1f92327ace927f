package lmcache4j.bench.controller;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.HttpURLConnection;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Map;

import lmcache4j.bench.internal.QuietLogs;
import lmcache4j.engine.json.Json;
import lmcache4j.server.controller.ControllerConfig;
import lmcache4j.server.controller.ControllerServer;
import lmcache4j.server.controller.Endpoint;
import lmcache4j.server.controller.internal.ControllerParts;

/**
 * The controller benchmark ({@code ./lmcache4j bench controller}):
 * <ul>
 *   <li>ingestion: admits per second through a controller against a bare JeroMQ PULL socket
 *       receiving the same multipart pushes in the same run ({@link IngestBench}; target ratio 0.5);</li>
 *   <li>memory: bytes per (chunk, holder) entry of the index at {@code entries} entries
 *       ({@link IndexMemoryBench}; target 64);</li>
 *   <li>lookup: p50/p99 latency of a lookup of an {@code promptTokens}-token prompt with
 *       {@code filler} chunks indexed, in-process and over HTTP (hashing included).</li>
 * </ul>
 */
public final class ControllerBench {
    /** The target of {@code ingest_vs_raw}. */
    public static final double INGEST_TARGET = 0.5;
    /** The target of {@code bytes_per_entry}. */
    public static final int BYTES_PER_ENTRY_TARGET = 64;

    private ControllerBench() {
    }

    /** What to measure; the defaults run in well under a minute. */
    public record Settings(long ingestOps, int opsPerFrame, int framesPerPush, int ingestRuns, long memoryEntries,
                           long lookupFiller, int promptTokens, int lookups, int httpLookups, long seed) {
        public static final long DEFAULT_INGEST_OPS = 1_000_000;
        public static final int DEFAULT_OPS_PER_FRAME = 64;
        public static final int DEFAULT_FRAMES_PER_PUSH = 8;
        public static final int DEFAULT_INGEST_RUNS = 3;
        public static final long DEFAULT_MEMORY_ENTRIES = 10_000_000;
        public static final long DEFAULT_LOOKUP_FILLER = 1_000_000;
        public static final int DEFAULT_PROMPT_TOKENS = 8192;
        public static final int DEFAULT_LOOKUPS = 2_000;
        public static final int DEFAULT_HTTP_LOOKUPS = 500;

        public Settings {
            if (ingestOps < 1 || opsPerFrame < 1 || framesPerPush < 1 || ingestRuns < 1 || memoryEntries < 2
                    || lookupFiller < 0 || promptTokens < 256 || lookups < 1 || httpLookups < 1) {
                throw new IllegalArgumentException("bad controller bench settings: " + this);
            }
        }

        public static Settings defaults() {
            return new Settings(DEFAULT_INGEST_OPS, DEFAULT_OPS_PER_FRAME, DEFAULT_FRAMES_PER_PUSH, DEFAULT_INGEST_RUNS,
                    DEFAULT_MEMORY_ENTRIES, DEFAULT_LOOKUP_FILLER, DEFAULT_PROMPT_TOKENS, DEFAULT_LOOKUPS,
                    DEFAULT_HTTP_LOOKUPS, 42);
        }
    }

    /** Latency percentiles, in microseconds. */
    public record Latency(double p50, double p99, double mean) {
        static Latency of(long[] nanos) {
            long[] s = nanos.clone();
            Arrays.sort(s);
            return new Latency(s[(int) (s.length * 0.50)] / 1e3, s[Math.min(s.length - 1, (int) (s.length * 0.99))] / 1e3,
                    Arrays.stream(s).average().orElse(0) / 1e3);
        }
    }

    /** The measurement. */
    public record Result(Settings settings, double admitOpsPerSecond, double rawPullOpsPerSecond, double[] runRatios,
                         double curveOpsPerSecond, long ingestFrames, long ingestBytes, IndexMemoryBench.Result memory,
                         Latency lookup, Latency httpLookup, int promptChunks, long lookupIndexEntries, int bestTokens) {
        public double ingestVsRaw() {
            return admitOpsPerSecond / rawPullOpsPerSecond;
        }

        /** Ingestion with a deployment secret (every socket CURVE) over ingestion without one. */
        public double curveVsPlain() {
            return curveOpsPerSecond / admitOpsPerSecond;
        }
    }

    /** Runs every part; progress lines go to {@code progress}. */
    public static Result run(Settings s, PrintStream progress) throws InterruptedException, IOException {
        try (QuietLogs _ = QuietLogs.warningsOnly()) {
            return measure(s, progress);
        }
    }

    private static Result measure(Settings s, PrintStream progress) throws InterruptedException, IOException {
        progress.printf("controller bench: ingestion, %,d admits in frames of %d, %d frames a push, %d runs%n",
                s.ingestOps(), s.opsPerFrame(), s.framesPerPush(), s.ingestRuns());
        IngestBench ingest = new IngestBench(s.ingestOps(), s.opsPerFrame(), s.framesPerPush(), 4, s.seed());
        double[] controller = new double[s.ingestRuns()];
        double[] raw = new double[s.ingestRuns()];
        double[] ratios = new double[s.ingestRuns()];
        double[] curve = new double[s.ingestRuns()];
        ingest.run(); // warmup: JIT of the codec, the index and JeroMQ
        for (int i = 0; i < s.ingestRuns(); i++) {
            IngestBench.Run r = ingest.run();
            controller[i] = r.controllerOpsPerSecond();
            raw[i] = r.rawOpsPerSecond();
            ratios[i] = controller[i] / raw[i];
            curve[i] = r.curveOpsPerSecond();
            progress.printf("  run %d: controller %,.0f admits/s, raw PULL %,.0f/s (%.2f); with CURVE %,.0f/s%n", i + 1,
                    controller[i], raw[i], ratios[i], curve[i]);
        }
        IndexMemoryBench.Result memory = IndexMemoryBench.run(s.memoryEntries(), 4, s.seed(), progress);
        System.gc();

        progress.printf("controller bench: lookups of a %,d-token prompt with %,d chunks indexed%n", s.promptTokens(), s.lookupFiller());
        ControllerConfig config = ControllerConfig.loopbackAnyPorts().withLimits(8 << 20, 2, 64L << 20,
                (int) Math.min(1 << 28, s.lookupFiller() + 1024));
        try (ControllerServer server = ControllerServer.start(config)) {
            LookupFixture fixture = new LookupFixture(ControllerParts.index(server), server.lookup().keys(), s.lookupFiller(), 16,
                    s.promptTokens(), s.seed());
            int[][] prompts = fixture.prompts;
            int bestTokens = server.lookup().lookup(prompts[0]).best().orElseThrow().tokens();
            long[] nanos = new long[s.lookups()];
            for (int i = 0; i < s.lookups() / 4 + 1; i++) { // warmup
                server.lookup().lookup(prompts[i % prompts.length]);
            }
            for (int i = 0; i < nanos.length; i++) {
                long t0 = System.nanoTime();
                server.lookup().lookup(prompts[i % prompts.length]);
                nanos[i] = System.nanoTime() - t0;
            }
            Latency inProcess = Latency.of(nanos);
            String[] bodies = new String[prompts.length];
            for (int p = 0; p < prompts.length; p++) {
                bodies[p] = Json.write(Map.of("tokens", Arrays.stream(prompts[p]).asLongStream().boxed().toList()));
            }
            Endpoint http = server.httpEndpoint();
            long[] httpNanos = new long[s.httpLookups()];
            for (int i = 0; i < s.httpLookups() / 4 + 1; i++) {
                post(http, bodies[i % bodies.length]);
            }
            for (int i = 0; i < httpNanos.length; i++) {
                long t0 = System.nanoTime();
                String answer = post(http, bodies[i % bodies.length]);
                httpNanos[i] = System.nanoTime() - t0;
                if (i == 0 && !answer.contains("\"best_tokens\": " + bestTokens)) {
                    throw new IllegalStateException("the HTTP lookup answered " + answer + ", not the in-process best of "
                            + bestTokens + " tokens");
                }
            }
            int chunks = server.lookup().keys().of(prompts[0]).count();
            return new Result(s, median(controller), median(raw), ratios, median(curve), ingest.frames(), ingest.bytes(), memory, inProcess,
                    Latency.of(httpNanos), chunks, ControllerParts.index(server).entries(), bestTokens);
        }
    }

    /** One POST /lookup on a kept-alive connection (HttpURLConnection pools them); returns the body. */
    private static String post(Endpoint http, String body) throws IOException {
        HttpURLConnection c = (HttpURLConnection) URI.create("http://" + http + "/lookup").toURL().openConnection();
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        c.setRequestMethod("POST");
        c.setDoOutput(true);
        c.setFixedLengthStreamingMode(bytes.length);
        try (OutputStream out = c.getOutputStream()) {
            out.write(bytes);
        }
        if (c.getResponseCode() != 200) {
            throw new IOException("POST /lookup answered " + c.getResponseCode());
        }
        try (InputStream in = c.getInputStream()) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }

    private static double median(double[] v) {
        double[] s = v.clone();
        Arrays.sort(s);
        return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
    }

}
