package lmcache4j.bench.pd;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;

import lmcache4j.allocator.DType;
import lmcache4j.allocator.HostArenaOptions;
import lmcache4j.allocator.host.HostArena;
import lmcache4j.allocator.tensor.TensorMemoryAllocator;
import lmcache4j.engine.LMCacheEngine;
import lmcache4j.engine.ModelMetadata;
import lmcache4j.engine.PreparedRequest;
import lmcache4j.engine.config.ConfigLoader;
import lmcache4j.engine.connector.ExternalKvCache;
import lmcache4j.engine.connector.KvConnector;
import lmcache4j.engine.pd.PdBackend;
import lmcache4j.engine.pd.wire.PdPusher;
import lmcache4j.engine.pd.wire.PdReceiveServer;

/**
 * The PD transfer alone, in one process over loopback: a request's chunks pushed by the sender
 * ({@link PdPusher}: gather into staging, allocation request, tagged writes, acknowledgements) into
 * a decoder's PD tier through its real ports, against a bare TCP stream of the same bytes in the same
 * sizes (one socket, direct buffers, no framing), and against the same push without tags (both ends
 * unkeyed, for this measurement only). The bare stream runs two ways: strict (every chunk gathered
 * into one hot buffer and read into one hot buffer) and distinct (each chunk gathered into its own
 * staging room and read into its own destination room, as the PD channel must). Each figure is the
 * median of {@code runs}, all interleaved so a drift of the machine falls on every one.
 */
public final class PdTransferBench {
    private static final String TOKEN = "bench-pd-transfer-token-0123456789";
    private static final int CHUNK = 256;
    /**
     * Chunks each way moves untimed first. The push's per-chunk code (frames, tags, allocation answers,
     * acknowledgements) reaches the JIT's optimizing tier only after some thousands of chunks, and a
     * prefiller that runs for hours runs that code: measured run by run with five untimed runs of 64
     * chunks ({@code bench pd --transfer-only --transfer-runs 80}, docs/performance.md), PD moved 0.97
     * GB/s in runs 1 to 20 and 1.5 to 2.1 GB/s from run 30 on, while the bare stream (its work is in
     * the kernel) stayed at 2.6 to 3.5.
     */
    public static final int WARMUP_CHUNKS = 4_096;

    /**
     * GB/s of each way (medians), the bytes each run moved, and the process's CPU time per GiB moved
     * each way (over all timed runs: on a machine with few cores the transfer is bound by it).
     */
    public record Result(long bytes, double pdGbps, double unkeyedGbps, double bareGbps, double bareDistinctGbps,
                         Cpu cpuMsPerGib) {
        /** Against the strict limit: one hot buffer on each end. */
        public double pdVsBare() {
            return pdGbps / bareGbps;
        }

        /** Against the stream the PD channel must at least make: distinct source and destination memory per chunk. */
        public double pdVsBareDistinct() {
            return pdGbps / bareDistinctGbps;
        }

        public double taggedVsUntagged() {
            return pdGbps / unkeyedGbps;
        }
    }

    /** Milliseconds of the process's CPU time per GiB moved, each way. */
    public record Cpu(double pd, double unkeyed, double bare, double bareDistinct) {
    }

    private PdTransferBench() {
    }

    /**
     * Pushes {@code chunks} chunks of {@code model}'s KV per run, {@code runs} timed runs after untimed
     * ones of {@link #WARMUP_CHUNKS} chunks in all.
     */
    public static Result run(ModelMetadata model, int chunks, int runs, java.io.PrintStream log) throws IOException {
        return run(model, chunks, runs, Math.max(1, Math.ceilDiv(WARMUP_CHUNKS, Math.max(1, chunks))), log);
    }

    /** As {@link #run(ModelMetadata, int, int, java.io.PrintStream)} after {@code warmupRuns} untimed runs (tests: few). */
    static Result run(ModelMetadata model, int chunks, int runs, int warmupRuns, java.io.PrintStream log) throws IOException {
        if (chunks < 1 || runs < 1 || warmupRuns < 0) {
            throw new IllegalArgumentException("the transfer needs at least one chunk and one run, got " + chunks + " and " + runs
                    + " (and " + warmupRuns + " untimed runs)");
        }
        long chunkBytes = model.chunkBytes(CHUNK);
        long bytes = chunkBytes * chunks;
        double[] pd = new double[runs];
        double[] unkeyed = new double[runs];
        double[] bare = new double[runs];
        double[] distinct = new double[runs];
        long[] cpuNanos = new long[4]; // pd, untagged, bare, bare distinct
        try (Arena arena = Arena.ofShared(); LMCacheEngine decoder = decoder(model, 2 * bytes);
             PdReceiveServer keyed = PdReceiveServer.start(decoder);
             PdReceiveServer open = PdReceiveServer.start(tier(decoder), "127.0.0.1", 0, 0, Optional.empty(),
                     Duration.ofSeconds(30));
             PdPusher keyedPusher = pusher(model, bytes, Optional.of(TOKEN));
             PdPusher openPusher = pusher(model, bytes, Optional.empty())) {
            Kv kv = new Kv(arena, model, chunks * CHUNK);
            // allocated once and touched by the warm-up runs, as the pusher's staging and the PD buffer are
            MemorySegment staging = arena.allocate(bytes, 4096);
            MemorySegment rooms = arena.allocate(bytes, 4096);
            SplittableRandom random = new SplittableRandom(7);
            for (int r = -warmupRuns; r < runs; r++) { // the negative runs warm every path
                long c0 = processCpuNanos();
                double k = push(keyedPusher, keyed, decoder, kv, random, chunks, bytes);
                long c1 = processCpuNanos();
                double u = push(openPusher, open, decoder, kv, random, chunks, bytes);
                long c2 = processCpuNanos();
                double b = bare(kv, chunkBytes, chunks, Optional.empty());
                long c3 = processCpuNanos();
                double d = bare(kv, chunkBytes, chunks, Optional.of(new Rooms(staging, rooms)));
                long c4 = processCpuNanos();
                if (r >= 0) {
                    cpuNanos[0] += c1 - c0;
                    cpuNanos[1] += c2 - c1;
                    cpuNanos[2] += c3 - c2;
                    cpuNanos[3] += c4 - c3;
                    pd[r] = k;
                    unkeyed[r] = u;
                    bare[r] = b;
                    distinct[r] = d;
                    log.printf("bench pd: transfer of %d MiB, run %d: PD %.2f GB/s, untagged %.2f GB/s, bare TCP %.2f GB/s,"
                            + " bare TCP distinct memory %.2f GB/s%n", bytes >> 20, r + 1, k, u, b, d);
                }
            }
        }
        double gib = (double) bytes * runs / (1L << 30);
        return new Result(bytes, median(pd), median(unkeyed), median(bare), median(distinct), new Cpu(cpuNanos[0] / 1e6 / gib,
                cpuNanos[1] / 1e6 / gib, cpuNanos[2] / 1e6 / gib, cpuNanos[3] / 1e6 / gib));
    }

    /** CPU time of every thread of this process so far (the kernel's work on the sockets included). */
    private static long processCpuNanos() {
        if (java.lang.management.ManagementFactory.getOperatingSystemMXBean()
                instanceof com.sun.management.OperatingSystemMXBean os) {
            return os.getProcessCpuTime();
        }
        throw new IllegalStateException("this JVM does not report its process CPU time");
    }

    private static LMCacheEngine decoder(ModelMetadata model, long bufferBytes) {
        return LMCacheEngine.create(ConfigLoader.builder().environment(Map.of()).set("chunk_size", CHUNK)
                        .set("max_local_cpu_size", 0.01).set("local_cpu", false).set("hash_seed", "0").set("enable_pd", true)
                        .set("pd_role", "receiver").set("pd_buffer_size", (double) bufferBytes).set("pd_buffer_device", "cpu")
                        .set("pd_peer_host", "127.0.0.1").set("pd_peer_init_port", List.of(0)).set("pd_peer_alloc_port", List.of(0))
                        .set("extra_config", Map.of("p2p_token", TOKEN, "pd_timeout_ms", 30_000)).build(), model,
                KvConnector.host(1), List.of());
    }

    private static PdBackend tier(LMCacheEngine e) {
        return e.storage().tier(PdBackend.NAME).map(PdBackend.class::cast).orElseThrow();
    }

    private static PdPusher pusher(ModelMetadata model, long bytes, Optional<String> token) {
        HostArena arena = HostArena.allocate(bytes + (1 << 20), HostArenaOptions.DEFAULT.withPrefault(true));
        return new PdPusher(TensorMemoryAllocator.create("bench-staging", arena, TensorMemoryAllocator.DEFAULT_ALIGNMENT),
                model, CHUNK, token.map(t -> t.getBytes(StandardCharsets.UTF_8)), Duration.ofSeconds(30), Optional.empty(), 0);
    }

    /** One request of fresh tokens (fresh keys), every chunk pushed; GB/s from the first gather to the last acknowledgement. */
    private static double push(PdPusher pusher, PdReceiveServer server, LMCacheEngine decoder, Kv kv, SplittableRandom random,
                               int chunks, long bytes) {
        int[] tokens = random.ints(chunks * CHUNK, 0, 30_000).toArray();
        PreparedRequest request = decoder.prepare(tokens, Map.of());
        long t0 = System.nanoTime();
        PdPusher.Transfer t = pusher.begin("bench-" + t0, request.chunks(), new PdPusher.Peer("127.0.0.1", server.initPort(),
                server.allocPort()));
        t.pushComputed(kv, tokens.length);
        PdPusher.Result r = t.finish();
        long nanos = System.nanoTime() - t0;
        if (r.pushedChunks() != chunks) {
            throw new IllegalStateException("the PD push moved " + r.pushedChunks() + " of " + chunks + " chunks: "
                    + r.stopReason().orElse("?"));
        }
        server.tier().clear(); // the chunks no retrieve reads: room for the next run
        return bytes / (nanos / 1e9) / 1e9;
    }

    /** Distinct memory for the bare stream: chunk i is gathered into {@code staging}'s i-th room and read into {@code rooms}'. */
    private record Rooms(MemorySegment staging, MemorySegment rooms) {
    }

    /**
     * The same bytes, chunk by chunk, over one plain loopback TCP connection: through one hot buffer on each end, or
     * (with {@code distinct}) each chunk through its own rooms, whose contents are checked after the clock stops.
     */
    private static double bare(Kv kv, long chunkBytes, int chunks, Optional<Rooms> distinct) throws IOException {
        try (ServerSocketChannel server = ServerSocketChannel.open().bind(new InetSocketAddress(InetAddress.getLoopbackAddress(),
                0)); Arena arena = Arena.ofShared()) { // the reading thread writes into it too
            MemorySegment into = distinct.map(Rooms::rooms).orElseGet(() -> arena.allocate(chunkBytes, 4096));
            CompletableFuture<Void> reader = CompletableFuture.runAsync(() -> {
                try (SocketChannel c = server.accept()) {
                    for (int i = 0; i < chunks; i++) {
                        ByteBuffer b = room(into, distinct.isPresent() ? i : 0, chunkBytes).asByteBuffer();
                        while (b.hasRemaining()) {
                            if (c.read(b) < 0) {
                                throw new IOException("the bare stream closed early");
                            }
                        }
                    }
                    c.write(ByteBuffer.wrap(new byte[1]));
                } catch (IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            }, r -> Thread.ofPlatform().daemon().start(r));
            long t0 = System.nanoTime();
            try (SocketChannel c = SocketChannel.open(server.getLocalAddress())) {
                c.setOption(java.net.StandardSocketOptions.TCP_NODELAY, true);
                MemorySegment from = distinct.map(Rooms::staging).orElseGet(() -> arena.allocate(chunkBytes, 4096));
                for (int i = 0; i < chunks; i++) {
                    MemorySegment room = room(from, distinct.isPresent() ? i : 0, chunkBytes);
                    kv.gather(i * CHUNK, (i + 1) * CHUNK, room); // the same copy out of the KV cache the push makes
                    ByteBuffer b = room.asByteBuffer();
                    while (b.hasRemaining()) {
                        c.write(b);
                    }
                }
                c.read(ByteBuffer.allocate(1));
            }
            try {
                reader.join();
            } catch (java.util.concurrent.CompletionException e) {
                throw new IOException("the bare stream's reader failed: " + e.getCause(), e.getCause());
            }
            double gbps = chunkBytes * chunks / ((System.nanoTime() - t0) / 1e9) / 1e9;
            if (distinct.isPresent()) {
                checkLanded(kv, distinct.get().rooms(), chunkBytes, chunks);
            }
            return gbps;
        }
    }

    private static MemorySegment room(MemorySegment buffer, int i, long chunkBytes) {
        return buffer.asSlice(i * chunkBytes, chunkBytes);
    }

    /** Every chunk landed in its own room: a stream that reused one room would not be the limit it claims to be. */
    private static void checkLanded(Kv kv, MemorySegment rooms, long chunkBytes, int chunks) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment expected = a.allocate(chunkBytes, 4096);
            for (int i = 0; i < chunks; i++) {
                kv.gather(i * CHUNK, (i + 1) * CHUNK, expected);
                if (room(rooms, i, chunkBytes).mismatch(expected) >= 0) {
                    throw new IllegalStateException("the bare stream into distinct memory did not land chunk " + i
                            + " in its own room");
                }
            }
        }
    }

    static double median(double[] values) {
        double[] v = values.clone();
        Arrays.sort(v);
        int n = v.length;
        return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    }

    /** A KV cache of random values in one segment: {@code [2][layers][positions × hidden]} floats. */
    private static final class Kv implements ExternalKvCache {
        private final MemorySegment all;
        private final ModelMetadata model;
        private final int positions;
        private final long row;

        Kv(Arena arena, ModelMetadata model, int positions) {
            this.model = model;
            this.positions = positions;
            this.row = (long) model.numKvHeads() * model.headSize() * Float.BYTES;
            this.all = arena.allocate(2L * model.numLayers() * positions * row, 4096);
            SplittableRandom r = new SplittableRandom(3);
            for (long i = 0; i < all.byteSize() / Float.BYTES; i++) {
                all.setAtIndex(ValueLayout.JAVA_FLOAT, i, (float) r.nextDouble());
            }
        }

        @Override public DType dtype() { return DType.FLOAT32; }
        @Override public int layerCount() { return model.numLayers(); }
        @Override public int numKvHeads() { return model.numKvHeads(); }
        @Override public int headSize() { return model.headSize(); }
        @Override public int capacity() { return positions; }

        @Override
        public void gather(int start, int end, MemorySegment chunk) {
            int tokens = end - start;
            for (int plane = 0; plane < 2 * model.numLayers(); plane++) {
                MemorySegment.copy(all, (plane * (long) positions + start) * row, chunk, plane * tokens * row, tokens * row);
            }
        }

        @Override
        public void scatter(MemorySegment chunk, int start, int end) {
            throw new UnsupportedOperationException("the transfer benchmark only sends");
        }
    }
}
