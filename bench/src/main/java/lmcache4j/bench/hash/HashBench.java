package lmcache4j.bench.hash;

import java.io.PrintStream;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;

import lmcache4j.engine.key.ChunkHash;
import lmcache4j.engine.key.ChunkHasher;
import lmcache4j.engine.key.HashAlgorithm;

/**
 * Throughput of the {@code sha256_cbor} prefix hash chain against its limit in the same process:
 * a bare {@link MessageDigest} SHA-256 over the very CBOR bytes the chain hashes, encoded before
 * the clock starts. The ratio says how much the CBOR encoding and chaining cost on top of SHA-256
 * itself (target: at least 0.8).
 *
 * <p>Tokens are drawn below a Llama-3-sized vocabulary (128256), so most take 5 CBOR bytes and
 * the rest 3, as in real prompts. A run repeats whole passes over the tokens for at least
 * {@link Settings#minRunNanos}; the two measurements alternate run by run so drift hits both; the
 * result is the median run of each.
 */
public final class HashBench {
    private HashBench() {
    }

    /** What to measure. */
    public record Settings(int tokens, int chunkSize, int warmup, int runs, long minRunNanos, long seed) {
        public static final int DEFAULT_TOKENS = 128 * 1024;
        public static final int DEFAULT_CHUNK_SIZE = 256;
        public static final int DEFAULT_WARMUP = 5;
        public static final int DEFAULT_RUNS = 9;
        public static final long DEFAULT_MIN_RUN_NANOS = 200_000_000L;

        public Settings {
            if (tokens < 1 || chunkSize < 1 || warmup < 0 || runs < 1 || minRunNanos < 0) {
                throw new IllegalArgumentException("tokens, chunk size and runs must be at least 1, warmup and run time "
                        + "at least 0: " + tokens + ", " + chunkSize + ", " + runs + ", " + warmup + ", " + minRunNanos);
            }
        }

        /** The defaults: 128k tokens, 256-token chunks, 5 warmup and 9 measured runs of at least 200 ms. */
        public static Settings defaults() {
            return new Settings(DEFAULT_TOKENS, DEFAULT_CHUNK_SIZE, DEFAULT_WARMUP, DEFAULT_RUNS, DEFAULT_MIN_RUN_NANOS, 42);
        }
    }

    /**
     * The measurement.
     *
     * @param hashTokensPerSecond tokens per second through {@link ChunkHasher#chain}, median run
     * @param rawTokensPerSecond  tokens per second of bare SHA-256 over the pre-encoded chunks, median run
     * @param cborBytes           the CBOR bytes of one pass (what SHA-256 digests)
     * @param chunks              chunks per pass
     * @param intTokensPerSecond  tokens per second through {@link ChunkHasher#intChain} (LMCache's integer chain,
     *                            the default storage keys), median run
     */
    public record Result(Settings settings, double hashTokensPerSecond, double rawTokensPerSecond, long cborBytes,
                         int chunks, double intTokensPerSecond) {
        /** {@code int chain / raw}: LMCache's integer chain against the same bare SHA-256 runs. */
        public double intRatio() {
            return intTokensPerSecond / rawTokensPerSecond;
        }

        /** {@code hash / raw}: 1.0 means encoding and chaining are free. */
        public double ratio() {
            return hashTokensPerSecond / rawTokensPerSecond;
        }

        /** SHA-256 bandwidth of the raw runs, in bytes per second. */
        public double rawBytesPerSecond() {
            return rawTokensPerSecond / settings.tokens() * cborBytes;
        }
    }

    /** Runs the benchmark; progress lines go to {@code progress}. */
    public static Result run(Settings s, PrintStream progress) {
        int[] tokens = new SplittableRandom(s.seed()).ints(s.tokens(), 0, 128_256).toArray();
        ChunkHasher hasher = ChunkHasher.seeded(HashAlgorithm.SHA256_CBOR, "0");
        List<ChunkHash> chain = hasher.chain(tokens, s.chunkSize(), true);

        // The limit's input: exactly the bytes the chain hashes, each chunk with its real parent.
        byte[][] inputs = new byte[chain.size()][];
        long cborBytes = 0;
        ChunkHash parent = hasher.noneHash();
        for (int c = 0; c < inputs.length; c++) {
            int from = c * s.chunkSize();
            inputs[c] = hasher.cborInput(parent, tokens, from, Math.min(from + s.chunkSize(), tokens.length));
            cborBytes += inputs[c].length;
            parent = chain.get(c);
        }
        MessageDigest sha = sha256();
        if (!Arrays.equals(sha.digest(inputs[inputs.length - 1]), chain.getLast().toBytes())) {
            throw new IllegalStateException("the raw SHA-256 of the last chunk's CBOR differs from the chain's hash");
        }

        Pass hashPass = () -> {
            List<ChunkHash> hashes = hasher.chain(tokens, s.chunkSize(), true);
            return hashes.getLast().byteAt(0);
        };
        Pass intPass = () -> {
            List<ChunkHash> hashes = hasher.intChain(tokens, s.chunkSize(), true);
            return hashes.getLast().byteAt(7);
        };
        Pass rawPass = () -> {
            int sink = 0;
            for (byte[] input : inputs) {
                sha.update(input);
                sink ^= sha.digest()[0];
            }
            return sink;
        };

        int passes = calibrate(hashPass, s.minRunNanos());
        progress.printf("hash bench: %d tokens in %d chunks of %d, %d CBOR bytes a pass; %d passes a run, %d warmup + %d runs%n",
                s.tokens(), inputs.length, s.chunkSize(), cborBytes, passes, s.warmup(), s.runs());
        long[] hashNanos = new long[s.runs()];
        long[] rawNanos = new long[s.runs()];
        long[] intNanos = new long[s.runs()];
        int sink = 0;
        for (int r = -s.warmup(); r < s.runs(); r++) {
            long t0 = System.nanoTime();
            for (int p = 0; p < passes; p++) {
                sink += hashPass.run();
            }
            long t1 = System.nanoTime();
            for (int p = 0; p < passes; p++) {
                sink += rawPass.run();
            }
            long t2 = System.nanoTime();
            for (int p = 0; p < passes; p++) {
                sink += intPass.run();
            }
            long t3 = System.nanoTime();
            if (r >= 0) {
                hashNanos[r] = t1 - t0;
                rawNanos[r] = t2 - t1;
                intNanos[r] = t3 - t2;
            }
        }
        if (sink == 42_424_242) {
            progress.println(); // keeps the passes' results alive; practically never taken
        }
        double tokensPerRun = (double) s.tokens() * passes;
        return new Result(s, tokensPerRun / median(hashNanos) * 1e9, tokensPerRun / median(rawNanos) * 1e9,
                cborBytes, inputs.length, tokensPerRun / median(intNanos) * 1e9);
    }

    /** One pass over all tokens; returns something derived from the output so it cannot be skipped. */
    @FunctionalInterface
    private interface Pass {
        int run();
    }

    /** Passes per run so that a run lasts at least {@code minNanos}. */
    private static int calibrate(Pass pass, long minNanos) {
        int passes = 1;
        while (true) {
            long t0 = System.nanoTime();
            for (int p = 0; p < passes; p++) {
                pass.run();
            }
            long elapsed = System.nanoTime() - t0;
            if (elapsed >= minNanos || passes >= 1 << 20) {
                return passes;
            }
            passes = (int) Math.min(1 << 20, Math.max(passes * 2L, (long) (passes * 1.2 * minNanos / Math.max(1, elapsed))));
        }
    }

    private static double median(long[] values) {
        long[] sorted = values.clone();
        Arrays.sort(sorted);
        int n = sorted.length;
        return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0;
    }

    private static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
