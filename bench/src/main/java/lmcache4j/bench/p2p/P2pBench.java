package lmcache4j.bench.p2p;

import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.BindException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;

import lmcache4j.allocator.DType;
import lmcache4j.allocator.MemoryFormat;
import lmcache4j.allocator.MemoryObj;
import lmcache4j.allocator.TensorShape;
import lmcache4j.bench.internal.QuietLogs;
import lmcache4j.engine.LMCacheEngine;
import lmcache4j.engine.ModelMetadata;
import lmcache4j.engine.config.ConfigLoader;
import lmcache4j.engine.config.LMCacheEngineConfig;
import lmcache4j.engine.connector.KvConnector;
import lmcache4j.engine.key.CacheKey;
import lmcache4j.engine.key.HashAlgorithm;
import lmcache4j.engine.p2p.P2pBackend;
import lmcache4j.engine.p2p.PeerHolding;
import lmcache4j.engine.remote.lm.LmConnector;
import lmcache4j.engine.remote.lm.LmSession;
import lmcache4j.engine.remote.lm.PayloadTag;
import lmcache4j.engine.storage.PrefetchedPrefix;
import lmcache4j.server.controller.ControllerConfig;
import lmcache4j.server.controller.ControllerServer;
import lmcache4j.server.lm.LmServerLimits;
import lmcache4j.server.p2p.P2pTransferServer;

/**
 * {@code ./lmcache4j bench p2p}: 256-token Llama-3-8B chunks (32 layers, 8 KV heads × 128, bf16:
 * 32 MiB each) fetched by engine B from engine A's CPU tier through B's P2P tier (lookup, then the
 * tier's parallel prefetch: transfer, CRC32C check, write into B's CPU tier), against the transfer
 * channel's own ceiling in the same run: an {@link LmConnector} with the tier's connection count
 * reading the same chunks from the same transfer server into ready memory, unchecked. Both engines
 * live in this process with a cache controller ({@link ControllerServer}, in process too) and talk
 * over loopback TCP: A reports its chunks to the controller, B's lookup is one
 * {@code BatchedP2PLookupMsg}. Runs alternate tier and ceiling, and the medians are reported.
 */
public final class P2pBench {
    /** Settings; {@link #defaults()} is the short run of the command. */
    public record Settings(int chunks, int runs, int warmup, int connections, int layers, int tokens, int kvHeads, int headSize) {
        public static final int DEFAULT_CHUNKS = 16;
        public static final int DEFAULT_RUNS = 7;
        public static final int DEFAULT_WARMUP = 1;
        public static final int DEFAULT_CONNECTIONS = 4;

        public Settings {
            if (chunks < 1 || runs < 1 || warmup < 0 || connections < 1) {
                throw new IllegalArgumentException("chunks, runs and connections must be >= 1 and warmup >= 0");
            }
        }

        public static Settings defaults() {
            return new Settings(DEFAULT_CHUNKS, DEFAULT_RUNS, DEFAULT_WARMUP, DEFAULT_CONNECTIONS, 32, 256, 8, 128);
        }

        /** Bytes of one chunk: K and V × layers × tokens × hidden × 2 (bf16). */
        public long chunkBytes() {
            return 2L * layers * tokens * kvHeads * headSize * 2;
        }
    }

    /**
     * @param p2pGetGbps     chunks through the P2P tier, GB/s (10^9 B/s), median
     * @param ceilingGetGbps the connector alone against the same server, median
     * @param untaggedGetGbps the connector alone against a second transfer server over A without a token
     *                        (no handshake, no payload tags), median
     * @param tagGbps        one core computing the payload tag over a chunk in off-heap memory, as both ends of a
     *                       tagged transfer do (PayloadTag), median
     * @param mismatches     chunks B holds afterwards that differ from A's
     */
    public record Result(Settings settings, double p2pGetGbps, double ceilingGetGbps, double untaggedGetGbps, double tagGbps,
                         double[] p2pRuns, double[] ceilingRuns, double[] untaggedRuns,
                         long verifiedChunks, long mismatches, long rejected) {
        public double ratio() {
            return p2pGetGbps / ceilingGetGbps;
        }

        /** What the payload tags leave of the channel's speed: tagged / untagged connector, same chunks, same run. */
        public double taggedVsUntagged() {
            return ceilingGetGbps / untaggedGetGbps;
        }
    }

    private P2pBench() {
    }

    public static Result run(Settings s, PrintStream progress) {
        try (QuietLogs _ = QuietLogs.warningsOnly()) {
            for (int attempt = 1; ; attempt++) {
                try {
                    return measure(s, progress);
                } catch (IOException | UncheckedIOException e) {
                    if (!(e instanceof BindException || e.getCause() instanceof BindException)) {
                        throw e;
                    }
                    // The P2P ports are picked free, then bound by the engines: an ephemeral port taken
                    // in between (by the controller's or another process's sockets) fails the setup,
                    // before anything is measured; pick again.
                    if (attempt == PORT_ATTEMPTS) {
                        throw e;
                    }
                    progress.printf(Locale.ROOT, "p2p: %s; picking other ports%n", e.getMessage());
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static final int PORT_ATTEMPTS = 3;

    private static Result measure(Settings s, PrintStream progress) throws IOException {
        ModelMetadata model = new ModelMetadata("meta-llama/Meta-Llama-3-8B", 1, 0, DType.BFLOAT16, s.layers(), s.kvHeads(),
                s.headSize(), false);
        TensorShape shape = TensorShape.of(2, s.layers(), s.tokens(), s.kvHeads() * s.headSize());
        int[] tokens = new int[s.chunks() * s.tokens()];
        SplittableRandom random = new SplittableRandom(14);
        Arrays.setAll(tokens, i -> random.nextInt(128_000));
        Optional<String> token = Optional.of("bench-p2p-" + Long.toHexString(random.nextLong()));
        int[] p2pPorts = freePorts(2);
        try (ControllerServer controller = ControllerServer.start(ControllerConfig.loopbackAnyPorts()
                     .withHashing(s.tokens(), false, HashAlgorithm.SHA256_CBOR, Optional.of(HASH_SEED)));
             LMCacheEngine a = LMCacheEngine.create(config(s, s.chunks() + 2, token, "bench-A", controller, p2pPorts[0]),
                     model, KvConnector.host(), List.of());
             P2pTransferServer server = P2pTransferServer.start(a, a.config().p2p().orElseThrow());
             LMCacheEngine b = LMCacheEngine.create(config(s, 2 * s.chunks() + 2, token, "bench-B", controller, p2pPorts[1]),
                     model, KvConnector.host(), List.of());
             LmConnector ceiling = new LmConnector(PeerHolding.parseAddress(server.peerInitUrl()), token,
                     Duration.ofSeconds(30), s.connections());
             P2pTransferServer plain = P2pTransferServer.start(a, "127.0.0.1", 0, Optional.empty(), LmServerLimits.defaults());
             LmConnector untagged = new LmConnector(PeerHolding.parseAddress(plain.peerInitUrl()), Optional.empty(),
                     Duration.ofSeconds(30), s.connections())) {
            List<CacheKey> keys = new ArrayList<>();
            a.prepare(tokens, Map.of()).chunks().forEach(r -> keys.add(r.key()));
            fillA(a, keys, shape, random);
            b.prepare(tokens, Map.of()); // B keys the prompt for the controller, as a request to B would
            awaitController(b, keys);
            List<MemoryObj> into = new ArrayList<>();
            try {
                for (int i = 0; i < s.chunks(); i++) {
                    into.add(b.storage().allocateForStore(shape, DType.BFLOAT16, MemoryFormat.KV_2LTD).orElseThrow(
                            () -> new IllegalStateException("B's CPU tier has no room for the ceiling's buffers")));
                }
                double[] p2p = new double[s.runs()];
                double[] direct = new double[s.runs()];
                double[] bare = new double[s.runs()];
                double[] tag = new double[s.runs()];
                // the tag the tier's connections chose: both ends are this process, so what it prefers
                LmSession session = LmSession.established(token.orElseThrow().getBytes(StandardCharsets.UTF_8),
                        LmSession.nonce(), LmSession.nonce(), PayloadTag.Algorithm.preferred());
                for (int run = -s.warmup(); run < s.runs(); run++) {
                    double viaTier = throughTier(b, keys, s);
                    double viaConnector = throughConnector(ceiling, keys, into, s);
                    double viaPlain = throughConnector(untagged, keys, into, s);
                    double tagging = tagThroughput(session, into.getFirst().segment(), s.chunks());
                    if (run >= 0) {
                        p2p[run] = viaTier;
                        direct[run] = viaConnector;
                        bare[run] = viaPlain;
                        tag[run] = tagging;
                        progress.printf(Locale.ROOT, "p2p run %d: tier %.2f GB/s, connector alone %.2f GB/s,"
                                + " without token %.2f GB/s, tag %.2f GB/s%n", run + 1, viaTier, viaConnector, viaPlain,
                                tagging);
                    }
                }
                long mismatches = verify(a, b, keys);
                P2pBackend.Stats stats = ((P2pBackend) b.storage().tier(P2pBackend.NAME).orElseThrow()).stats();
                return new Result(s, median(p2p), median(direct), median(bare), median(tag), p2p, direct, bare, keys.size(), mismatches,
                        stats.rejected());
            } finally {
                into.forEach(MemoryObj::release);
            }
        }
    }

    private static final String HASH_SEED = "0";

    /** GB/s of one core tagging {@code chunk} {@code times} times, as each end of a tagged transfer does. */
    private static double tagThroughput(LmSession session, MemorySegment chunk, int times) {
        long t0 = System.nanoTime();
        for (int i = 0; i < times; i++) {
            session.serverToClient().next().update(chunk.asByteBuffer()).finish();
        }
        return (double) times * chunk.byteSize() / (System.nanoTime() - t0);
    }

    private static LMCacheEngineConfig config(Settings s, int chunksOfMemory, Optional<String> token, String instance,
                                              ControllerServer controller, int p2pPort) {
        double gb = chunksOfMemory * (double) s.chunkBytes() / (1L << 30);
        return ConfigLoader.builder().environment(Map.of()).set("chunk_size", s.tokens()).set("max_local_cpu_size", gb)
                .set("hash_seed", HASH_SEED).set("enable_controller", true).set("lmcache_instance_id", instance)
                .set("controller_pull_url", controller.pullEndpoint().connectAddress())
                .set("controller_reply_url", controller.replyEndpoint().connectAddress())
                .set("enable_p2p", true).set("p2p_host", "127.0.0.1").set("p2p_init_ports", List.of(p2pPort))
                .set("extra_config", Map.of("p2p_timeout_ms", 30_000, "p2p_token", token.orElseThrow(),
                        "p2p_connections", s.connections()))
                .build();
    }

    /** Admits reach the controller asynchronously: until it knows A's chunks, B's lookup finds fewer. */
    private static void awaitController(LMCacheEngine b, List<CacheKey> keys) {
        long until = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (b.storage().batchedContains(keys, false).hits() < keys.size()) {
            if (System.nanoTime() > until) {
                throw new IllegalStateException("the controller did not learn engine A's " + keys.size()
                        + " chunks within 30 s");
            }
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted", e);
            }
        }
    }

    private static int[] freePorts(int n) throws IOException {
        List<ServerSocket> held = new ArrayList<>();
        try {
            int[] ports = new int[n];
            for (int i = 0; i < n; i++) {
                ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
                held.add(socket);
                ports[i] = socket.getLocalPort();
            }
            return ports;
        } finally {
            for (ServerSocket socket : held) {
                socket.close();
            }
        }
    }

    /** A's CPU tier holds every chunk, random bytes. */
    private static void fillA(LMCacheEngine a, List<CacheKey> keys, TensorShape shape, SplittableRandom random) {
        List<MemoryObj> objs = new ArrayList<>();
        for (int i = 0; i < keys.size(); i++) {
            MemoryObj obj = a.storage().allocateForStore(shape, DType.BFLOAT16, MemoryFormat.KV_2LTD).orElseThrow(
                    () -> new IllegalStateException("A's CPU tier has no room for the chunks"));
            var seg = obj.segment();
            for (long at = 0; at + 8 <= seg.byteSize(); at += 8) {
                seg.set(ValueLayout.JAVA_LONG_UNALIGNED, at, random.nextLong());
            }
            objs.add(obj);
        }
        a.storage().batchedPut(keys, objs, Optional.empty());
    }

    /** B forgets the chunks, then looks them up and prefetches them through its P2P tier. */
    private static double throughTier(LMCacheEngine b, List<CacheKey> keys, Settings s) {
        keys.forEach(k -> b.storage().remove(k));
        long t0 = System.nanoTime();
        int found = b.storage().batchedContains(keys, false).hits();
        PrefetchedPrefix ready = b.storage().prefetch(keys).join();
        long nanos = System.nanoTime() - t0;
        ready.objects().forEach(MemoryObj::release);
        if (found != keys.size() || ready.chunks() != keys.size()) {
            throw new IllegalStateException("the P2P tier brought " + ready.chunks() + " of " + keys.size()
                    + " chunks (lookup found " + found + ")");
        }
        return keys.size() * (double) s.chunkBytes() / nanos;
    }

    /** The transfer channel alone: the same chunks from the same server into ready memory, all at once. */
    private static double throughConnector(LmConnector ceiling, List<CacheKey> keys, List<MemoryObj> into, Settings s) {
        long t0 = System.nanoTime();
        List<CompletableFuture<Optional<MemoryObj>>> gets = new ArrayList<>();
        for (int i = 0; i < keys.size(); i++) {
            MemoryObj target = into.get(i);
            gets.add(ceiling.get(keys.get(i), meta -> Optional.of(target)));
        }
        for (CompletableFuture<Optional<MemoryObj>> g : gets) {
            g.join().orElseThrow(() -> new IllegalStateException("the connector lost a chunk"));
        }
        long nanos = System.nanoTime() - t0;
        return keys.size() * (double) s.chunkBytes() / nanos;
    }

    /** Every chunk B holds now equals A's, byte for byte. */
    private static long verify(LMCacheEngine a, LMCacheEngine b, List<CacheKey> keys) {
        long mismatches = 0;
        for (CacheKey key : keys) {
            MemoryObj mine = a.storage().cpu().getBlocking(key).orElseThrow();
            Optional<MemoryObj> theirs = b.storage().cpu().getBlocking(key);
            try {
                if (theirs.isEmpty() || mine.segment().asSlice(0, mine.byteSize())
                        .mismatch(theirs.get().segment().asSlice(0, theirs.get().byteSize())) != -1) {
                    mismatches++;
                }
            } finally {
                mine.release();
                theirs.ifPresent(MemoryObj::release);
            }
        }
        return mismatches;
    }

    private static double median(double[] values) {
        double[] v = values.clone();
        Arrays.sort(v);
        return v.length % 2 == 1 ? v[v.length / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
    }

}
