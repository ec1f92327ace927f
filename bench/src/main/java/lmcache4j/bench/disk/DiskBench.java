package lmcache4j.bench.disk;

import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import com.sun.nio.file.ExtendedOpenOption;

import lmcache4j.allocator.DType;
import lmcache4j.allocator.HostArenaOptions;
import lmcache4j.allocator.MemoryFormat;
import lmcache4j.allocator.MemoryObj;
import lmcache4j.allocator.TensorShape;
import lmcache4j.allocator.host.HostArena;
import lmcache4j.allocator.pool.MixedMemoryAllocator;
import lmcache4j.allocator.tensor.TensorMemoryAllocator;
import lmcache4j.bench.internal.BenchFiles;
import lmcache4j.bench.internal.QuietLogs;
import lmcache4j.engine.key.CacheEngineKey;
import lmcache4j.engine.key.ChunkHash;
import lmcache4j.engine.storage.cpu.LocalCpuBackend;
import lmcache4j.engine.storage.disk.ChunkFileHeader;
import lmcache4j.engine.storage.disk.ChunkFiles;
import lmcache4j.engine.storage.disk.LocalDiskBackend;

/**
 * The disk tier's write and read bandwidth against raw O_DIRECT {@link FileChannel} transfers of the
 * same bytes, in the same process and directory. Chunks are 256-token chunks of a Llama-3-8B-shaped
 * KV (32 layers × 8 KV heads × 128, bf16, KV_2LTD: 32 MiB each) in 4 KiB-aligned off-heap memory.
 *
 * <p>Each measured run does, on the same source objects, with the same number of threads:
 * <ol>
 *   <li>{@code raw}: every chunk written to its own file with {@code FileChannel.open(CREATE,
 *       TRUNCATE_EXISTING, WRITE, DIRECT)} straight from the object's segment, then read back the
 *       same way into a destination object; files deleted (untimed);</li>
 *   <li>{@code files}: the tier's file layer, {@link ChunkFiles#write} (header with CRC32C, payload,
 *       temp file + rename) and {@link ChunkFiles#readPayload} (header check, payload, CRC32C check);</li>
 *   <li>{@code tier}: the whole {@link LocalDiskBackend}: write = {@code batchedSubmitPut} of every
 *       chunk + {@code awaitPuts} (its own I/O threads; index, eviction accounting), read =
 *       {@code getBlocking} of every chunk (allocation in a CPU tier, then the file layer's read),
 *       from the benchmark's threads. This is the headline: what the engine gets.</li>
 * </ol>
 * Bandwidth is payload bytes ÷ wall time (GB/s = 10⁹ B/s); each figure is the median of the measured
 * runs. O_DIRECT bypasses the page cache, so reads come from the device; where the file system
 * refuses O_DIRECT (the tier's probe decides), everything is buffered, reads may be served by the
 * page cache, and the result says so. No fsync in either (the tier's default {@code local_disk.fsync}
 * is false). The tier's reads are verified byte for byte against the sources after the runs.
 */
public final class DiskBench {
    static final DType DTYPE = DType.BFLOAT16;
    static final int ALIGN = 4096;

    /**
     * @param chunks   chunks per write and read
     * @param runs     measured runs
     * @param warmup   unmeasured runs first
     * @param threads  concurrent transfers (the tier's {@code local_disk.io_threads} for its writes)
     * @param dir      the directory (a fresh temp dir under it is used and deleted), or null for /tmp
     * @param layers   attention layers (32)
     * @param tokens   tokens per chunk (256)
     * @param hidden   KV heads × head size (8 × 128)
     */
    public record Settings(int chunks, int runs, int warmup, int threads, Path dir, int layers, int tokens, int hidden) {
        public static final int DEFAULT_CHUNKS = 16;
        public static final int DEFAULT_RUNS = 5;
        public static final int DEFAULT_WARMUP = 1;
        public static final int DEFAULT_THREADS = 4;

        public static Settings defaults() {
            return new Settings(DEFAULT_CHUNKS, DEFAULT_RUNS, DEFAULT_WARMUP, DEFAULT_THREADS, null, 32, 256, 8 * 128);
        }

        public TensorShape shape() {
            return TensorShape.of(2, layers, tokens, hidden);
        }

        public long chunkBytes() {
            return 2L * layers * tokens * hidden * DTYPE.byteSize();
        }

        public long totalBytes() {
            return chunks * chunkBytes();
        }
    }

    /** Median GB/s of each measurement, the per-run figures, and what the tier reported. */
    public record Result(Settings settings, Path directory, boolean directIo, String ioDescription,
                         double[] rawWrite, double[] rawRead, double[] filesWrite, double[] filesRead,
                         double[] tierWrite, double[] tierRead, long mismatches, long tierReads, long tierWrites) {
        public double rawWriteGbps() {
            return median(rawWrite);
        }

        public double rawReadGbps() {
            return median(rawRead);
        }

        public double filesWriteGbps() {
            return median(filesWrite);
        }

        public double filesReadGbps() {
            return median(filesRead);
        }

        public double tierWriteGbps() {
            return median(tierWrite);
        }

        public double tierReadGbps() {
            return median(tierRead);
        }
    }

    private DiskBench() {
    }

    @FunctionalInterface
    private interface Job {
        void run(int chunk) throws Exception;
    }

    public static Result run(Settings s, PrintStream progress) {
        QuietLogs quiet = QuietLogs.warningsOnly();
        Path root = workDirectory(s.dir());
        long bytes = s.totalBytes();
        HostArenaOptions host = HostArenaOptions.DEFAULT.withCudaPinned(false).withHugePages(true).withPrefault(true);
        ExecutorService pool = Executors.newFixedThreadPool(s.threads());
        try (TensorMemoryAllocator srcAlloc = TensorMemoryAllocator.create("diskbench/src", HostArena.allocate(bytes, host), ALIGN);
             TensorMemoryAllocator dstAlloc = TensorMemoryAllocator.create("diskbench/dst", HostArena.allocate(bytes, host), ALIGN);
             LocalCpuBackend cpu = new LocalCpuBackend(new MixedMemoryAllocator("diskbench/cpu",
                     TensorMemoryAllocator.create("diskbench/cpu/kv", HostArena.allocate(bytes + s.chunks() * (long) ALIGN, host),
                             ALIGN)), "LRU", false, 30)) {
            List<MemoryObj> src = new ArrayList<>();
            List<MemoryObj> dst = new ArrayList<>();
            List<CacheEngineKey> keys = new ArrayList<>();
            SplittableRandom random = new SplittableRandom(42);
            for (int i = 0; i < s.chunks(); i++) {
                MemoryObj o = srcAlloc.allocate(s.shape(), DTYPE, MemoryFormat.KV_2LTD).orElseThrow();
                fill(o.segment(), random.nextLong());
                src.add(o);
                MemoryObj d = dstAlloc.allocate(s.shape(), DTYPE, MemoryFormat.KV_2LTD).orElseThrow();
                d.segment().fill((byte) 0);
                dst.add(d);
                byte[] hash = new byte[32];
                random.nextBytes(hash);
                keys.add(new CacheEngineKey("lmcache4j/diskbench-llama-3-8b", 1, 0, ChunkHash.of(hash), DTYPE));
            }
            Path rawDir = Files.createDirectories(root.resolve("raw"));
            Path filesDir = root.resolve("files");
            Path tierDir = root.resolve("tier");
            ChunkFiles files = new ChunkFiles(filesDir, true, false);
            boolean direct = files.directIo();
            long capacity = s.chunks() * (ChunkFileHeader.BYTES + (s.chunkBytes() + ALIGN - 1) / ALIGN * ALIGN) + ALIGN;
            int total = s.warmup() + s.runs();
            double[][] r = new double[6][s.runs()];
            long mismatches = 0;
            long tierReads = 0;
            long tierWrites = 0;
            for (int run = 0; run < total; run++) {
                int m = run - s.warmup();
                progress.printf(Locale.ROOT, "%s run %d/%d ...%n", m < 0 ? "warmup" : "measured", m < 0 ? run + 1 : m + 1,
                        m < 0 ? s.warmup() : s.runs());
                double[] raw = rawRun(pool, rawDir, direct, src, dst, bytes);
                double rw = raw[0];
                double rr = raw[1];
                double[] fileLayer = filesRun(pool, files, filesDir, keys, src, dst, bytes);
                double fw = fileLayer[0];
                double fr = fileLayer[1];
                TierRun t = tierRun(s, pool, cpu, tierDir, capacity, keys, src, run == total - 1);
                double tw = t.write();
                double tr = t.read();
                mismatches += t.mismatches();
                tierReads = t.reads();
                tierWrites = t.writes();
                if (m >= 0) {
                    r[0][m] = rw;
                    r[1][m] = rr;
                    r[2][m] = fw;
                    r[3][m] = fr;
                    r[4][m] = tw;
                    r[5][m] = tr;
                }
                progress.printf(Locale.ROOT, "  write GB/s: raw %.2f, files %.2f, tier %.2f; read GB/s: raw %.2f, files %.2f, tier %.2f%n",
                        rw, fw, tw, rr, fr, tr);
            }
            src.forEach(MemoryObj::release);
            dst.forEach(MemoryObj::release);
            return new Result(s, root, direct, files.ioDescription(), r[0], r[1], r[2], r[3], r[4], r[5], mismatches,
                    tierReads, tierWrites);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        } finally {
            pool.shutdownNow();
            BenchFiles.deleteTree(root);
            quiet.close();
        }
    }

    /** A fresh directory for the run's files under {@code dir} (null: the JVM's temporary directory). */
    private static Path workDirectory(Path dir) {
        Path base = dir == null ? Path.of(System.getProperty("java.io.tmpdir")) : dir;
        try {
            Files.createDirectories(base);
            return Files.createTempDirectory(base, "lmcache4j-diskbench-");
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create a directory under " + base + ": " + e.getMessage(), e);
        }
    }

    /** Raw {@code O_DIRECT} (where offered) writes, then reads, of one file per chunk: {write GB/s, read GB/s}. */
    private static double[] rawRun(ExecutorService pool, Path rawDir, boolean direct, List<MemoryObj> src,
                                   List<MemoryObj> dst, long bytes) throws IOException, InterruptedException {
        Set<OpenOption> write = direct
                ? Set.of(StandardOpenOption.CREATE, StandardOpenOption.TRUNCATE_EXISTING, StandardOpenOption.WRITE,
                ExtendedOpenOption.DIRECT)
                : Set.of(StandardOpenOption.CREATE, StandardOpenOption.TRUNCATE_EXISTING, StandardOpenOption.WRITE);
        Set<OpenOption> read = direct ? Set.of(StandardOpenOption.READ, ExtendedOpenOption.DIRECT)
                : Set.of(StandardOpenOption.READ);
        double w = gbps(bytes, timed(pool, src.size(), i -> {
            try (FileChannel ch = FileChannel.open(rawDir.resolve("chunk-" + i + ".bin"), write)) {
                writeFully(ch, src.get(i).segment());
            }
        }));
        double r = gbps(bytes, timed(pool, src.size(), i -> {
            try (FileChannel ch = FileChannel.open(rawDir.resolve("chunk-" + i + ".bin"), read)) {
                readFully(ch, dst.get(i).segment());
            }
        }));
        deleteFiles(rawDir);
        return new double[] {w, r};
    }

    /** The tier's file layer alone: every chunk written, then read: {write GB/s, read GB/s}. */
    private static double[] filesRun(ExecutorService pool, ChunkFiles files, Path filesDir, List<CacheEngineKey> keys,
                                     List<MemoryObj> src, List<MemoryObj> dst, long bytes) throws IOException, InterruptedException {
        double w = gbps(bytes, timed(pool, src.size(), i -> files.write(keys.get(i), src.get(i))));
        ChunkFileHeader[] headers = new ChunkFileHeader[src.size()];
        for (int i = 0; i < src.size(); i++) {
            headers[i] = files.readHeader(files.pathFor(keys.get(i))).orElseThrow();
        }
        double r = gbps(bytes, timed(pool, src.size(), i -> files.readPayload(files.pathFor(keys.get(i)), headers[i], dst.get(i))));
        deleteFiles(filesDir);
        return new double[] {w, r};
    }

    /** One run of the whole disk tier: its write and read GB/s, wrong chunks (compared when {@code check}), its counters. */
    private record TierRun(double write, double read, long mismatches, long reads, long writes) {
    }

    private static TierRun tierRun(Settings s, ExecutorService pool, LocalCpuBackend cpu, Path tierDir, long capacity,
                                   List<CacheEngineKey> keys, List<MemoryObj> src, boolean check)
            throws IOException, InterruptedException {
        long bytes = s.totalBytes();
        LocalDiskBackend tier = new LocalDiskBackend(new ChunkFiles(tierDir, true, false), cpu, capacity, "LRU",
                s.threads(), Math.max(64, s.chunks()));
        try {
            long t0 = System.nanoTime();
            tier.batchedSubmitPut(keys, src);
            tier.awaitPuts();
            double write = gbps(bytes, System.nanoTime() - t0);
            if (tier.stats().writes() != s.chunks()) {
                throw new IllegalStateException("the tier wrote " + tier.stats().writes() + " of " + s.chunks()
                        + " chunks: " + tier.stats());
            }
            MemoryObj[] got = new MemoryObj[s.chunks()];
            double read = gbps(bytes, timed(pool, s.chunks(), i -> got[i] = tier.getBlocking(keys.get(i)).orElseThrow(
                    () -> new IllegalStateException("the tier lost chunk " + i + ": " + tier.stats()))));
            long mismatches = 0;
            if (check) {
                for (int i = 0; i < s.chunks(); i++) {
                    if (got[i].segment().mismatch(src.get(i).segment()) >= 0) {
                        mismatches++;
                    }
                }
            }
            for (MemoryObj o : got) {
                o.release();
            }
            return new TierRun(write, read, mismatches, tier.stats().reads(), tier.stats().writes());
        } finally {
            tier.close();
            deleteFiles(tierDir);
        }
    }

    /** Runs {@code job} for every chunk on the pool; returns the wall time in ns. */
    private static long timed(ExecutorService pool, int chunks, Job job) throws InterruptedException {
        List<Future<?>> futures = new ArrayList<>(chunks);
        long t0 = System.nanoTime();
        for (int i = 0; i < chunks; i++) {
            int c = i;
            futures.add(pool.submit(() -> {
                job.run(c);
                return null;
            }));
        }
        for (Future<?> f : futures) {
            try {
                f.get();
            } catch (ExecutionException e) {
                throw new IllegalStateException("a transfer failed: " + e.getCause(), e.getCause());
            }
        }
        return System.nanoTime() - t0;
    }

    private static void writeFully(FileChannel ch, MemorySegment seg) throws IOException {
        long pos = 0;
        while (pos < seg.byteSize()) {
            var bb = seg.asSlice(pos, Math.min(seg.byteSize() - pos, 1L << 30)).asByteBuffer();
            while (bb.hasRemaining()) {
                pos += ch.write(bb, pos);
            }
        }
    }

    private static void readFully(FileChannel ch, MemorySegment seg) throws IOException {
        long pos = 0;
        while (pos < seg.byteSize()) {
            var bb = seg.asSlice(pos, Math.min(seg.byteSize() - pos, 1L << 30)).asByteBuffer();
            while (bb.hasRemaining()) {
                int n = ch.read(bb, pos);
                if (n < 0) {
                    throw new IOException("short file at " + pos);
                }
                pos += n;
            }
        }
    }

    private static void fill(MemorySegment seg, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        for (long off = 0; off < seg.byteSize(); off += 8) {
            seg.set(ValueLayout.JAVA_LONG_UNALIGNED, off, r.nextLong());
        }
    }

    private static void deleteFiles(Path dir) {
        if (!Files.isDirectory(dir)) {
            return;
        }
        try (var list = Files.list(dir)) {
            for (Path p : list.toList()) {
                Files.deleteIfExists(p);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static double gbps(long bytes, long nanos) {
        return bytes / (double) nanos;
    }

    public static double median(double[] values) {
        double[] v = values.clone();
        Arrays.sort(v);
        int n = v.length;
        return n == 0 ? Double.NaN : n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    }
}
