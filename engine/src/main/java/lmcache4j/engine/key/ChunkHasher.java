package lmcache4j.engine.key;

import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The prefix hash chain of token chunks, computed as vLLM and LMCache compute it with
 * {@code sha256_cbor} (spec §5.1):
 * <pre>
 *   NONE_HASH = sha256(cbor(seed string))            when a seed is set, else 32 random bytes
 *   h_i       = sha256(cbor([h_{i-1} as a byte string, [token ids], null]))   with h_0 = NONE_HASH
 * </pre>
 * where {@code cbor} is canonical CBOR ({@code cbor2.dumps(obj, canonical=True)}). The seed is
 * vLLM's: the {@code PYTHONHASHSEED} environment variable, hashed as a string (vLLM's
 * {@code init_none_hash}); two processes share keys only when they share it.
 *
 * <p>Thread-safe. Hashing reuses a per-thread CBOR buffer and {@link MessageDigest}, so the only
 * allocation per chunk is the resulting {@link ChunkHash} and its digest bytes. A {@link #chain}
 * of {@value ChainPipeline#MIN_CHUNKS_DEFAULT} chunks or more is computed with a helper thread that
 * encodes ahead ({@link ChainPipeline}); the hashes are the same either way.
 */
public final class ChunkHasher {
    /** The environment variable vLLM derives {@code NONE_HASH} from. */
    public static final String SEED_ENV = "PYTHONHASHSEED";

    private static final System.Logger LOG = System.getLogger(ChunkHasher.class.getName());
    private static final AtomicBoolean RANDOM_WARNED = new AtomicBoolean();
    private static final int NONE_HASH_BYTES = 32;

    /** Per-thread scratch: one CBOR buffer and one digest, reused for every chunk. */
    private static final ThreadLocal<Scratch> SCRATCH = ThreadLocal.withInitial(Scratch::new);

    private final HashAlgorithm algorithm;
    private final ChunkHash noneHash;
    private final Optional<String> seed;

    private ChunkHasher(HashAlgorithm algorithm, ChunkHash noneHash, Optional<String> seed) {
        this.algorithm = Objects.requireNonNull(algorithm, "algorithm");
        this.noneHash = Objects.requireNonNull(noneHash, "noneHash");
        this.seed = seed;
    }

    /** A hasher whose {@code NONE_HASH} is derived from {@code seed}, as vLLM does with {@code PYTHONHASHSEED}. */
    public static ChunkHasher seeded(HashAlgorithm algorithm, String seed) {
        Objects.requireNonNull(seed, "seed");
        Scratch s = SCRATCH.get();
        s.cbor.reset();
        s.cbor.writeText(seed);
        return new ChunkHasher(algorithm, s.digest(), Optional.of(seed));
    }

    /**
     * A hasher with a random {@code NONE_HASH}: its keys match no other process. Logs a warning
     * the first time in a process.
     */
    public static ChunkHasher unseeded(HashAlgorithm algorithm) {
        if (RANDOM_WARNED.compareAndSet(false, true)) {
            LOG.log(System.Logger.Level.WARNING, "No hash seed: neither a configured seed nor " + SEED_ENV
                    + " is set, so NONE_HASH is random and chunk keys will not match across processes "
                    + "(vLLM/LMCache with sha256_cbor and the same " + SEED_ENV + " would share them).");
        }
        return new ChunkHasher(algorithm, randomNoneHash(), Optional.empty());
    }

    /**
     * A hasher {@linkplain #seeded seeded} with {@code seed} when present, else {@linkplain #unseeded
     * unseeded}; the environment is not read (for a seed already resolved, as the engine config's
     * {@code hash_seed} is).
     */
    public static ChunkHasher of(HashAlgorithm algorithm, Optional<String> seed) {
        return seed.map(s -> seeded(algorithm, s)).orElseGet(() -> unseeded(algorithm));
    }

    /**
     * The hasher a process gets from its settings: seeded with {@code explicitSeed} when present,
     * else with {@code PYTHONHASHSEED} when that is set (to any value, the empty string included,
     * as vLLM reads it), else {@linkplain #unseeded unseeded}.
     */
    public static ChunkHasher create(HashAlgorithm algorithm, Optional<String> explicitSeed) {
        return create(algorithm, explicitSeed, System.getenv());
    }

    static ChunkHasher create(HashAlgorithm algorithm, Optional<String> explicitSeed, Map<String, String> env) {
        return of(algorithm, explicitSeed.or(() -> Optional.ofNullable(env.get(SEED_ENV))));
    }

    /** A hasher with a given {@code NONE_HASH}, for example one received from another process. */
    public static ChunkHasher withNoneHash(HashAlgorithm algorithm, ChunkHash noneHash) {
        return new ChunkHasher(algorithm, noneHash, Optional.empty());
    }

    /** {@code PYTHONHASHSEED} from this process's environment, if set. */
    public static Optional<String> environmentSeed() {
        return Optional.ofNullable(System.getenv(SEED_ENV));
    }

    /** 32 random bytes, as vLLM's {@code NONE_HASH} without a seed. Logs nothing: the caller tells the user. */
    public static ChunkHash randomNoneHash() {
        byte[] bytes = new byte[NONE_HASH_BYTES];
        new SecureRandom().nextBytes(bytes);
        return ChunkHash.wrap(bytes);
    }

    /** The hash function. */
    public HashAlgorithm algorithm() {
        return algorithm;
    }

    /** The parent of the first chunk. */
    public ChunkHash noneHash() {
        return noneHash;
    }

    /** The seed {@code NONE_HASH} came from; empty when it was random or given. */
    public Optional<String> seed() {
        return seed;
    }

    /**
     * The hash of chunk {@code tokens[from, to)} whose preceding chunk hashed to {@code parent}
     * ({@link #noneHash()} for the first chunk): vLLM's {@code hash_block_tokens}.
     */
    public ChunkHash next(ChunkHash parent, int[] tokens, int from, int to) {
        Objects.requireNonNull(parent, "parent");
        Objects.checkFromToIndex(from, to, tokens.length);
        Scratch s = SCRATCH.get();
        encode(s.cbor, parent, tokens, from, to);
        return s.digest();
    }

    /**
     * The hash of {@code tokens[from, to)} with no parent at all: CBOR null where the parent hash
     * goes. LMCache's segment database hashes each segment this way ({@code _hash_tokens(segment)}
     * with its default {@code prefix_hash=None}), so a segment's hash depends on nothing but its
     * tokens, not even the seed.
     */
    public ChunkHash unchained(int[] tokens, int from, int to) {
        Objects.checkFromToIndex(from, to, tokens.length);
        Scratch s = SCRATCH.get();
        encode(s.cbor, null, tokens, from, to);
        return s.digest();
    }

    /**
     * The prefix chain over {@code tokens}: one hash per consecutive {@code chunkSize}-token
     * chunk, the first chained to {@link #noneHash()}; a final shorter chunk only if
     * {@code includePartial}.
     */
    public List<ChunkHash> chain(int[] tokens, int chunkSize, boolean includePartial) {
        if (chunkSize < 1) {
            throw new IllegalArgumentException("chunk size must be at least 1, was " + chunkSize);
        }
        int end = includePartial ? tokens.length : tokens.length - tokens.length % chunkSize;
        ChunkHash[] hashes = new ChunkHash[(int) (((long) end + chunkSize - 1) / chunkSize)];
        Scratch s = SCRATCH.get();
        if (ChainPipeline.worthIt(hashes.length, noneHash)) {
            ChainPipeline.chain(noneHash, tokens, end, chunkSize, hashes, s.pipelineBuffer(hashes.length, chunkSize), s.sha256);
            return List.of(hashes);
        }
        ChunkHash parent = noneHash;
        for (int c = 0; c < hashes.length; c++) {
            int start = c * chunkSize;
            encode(s.cbor, parent, tokens, start, Math.min(start + chunkSize, end));
            parent = s.digest();
            hashes[c] = parent;
        }
        return List.of(hashes);
    }

    /**
     * LMCache's integer key of chunk {@code tokens[from, to)} after the chunk keyed {@code parentKey}
     * ({@link #noneIntKey()} for the first): since LMCache folds its token database's hashes to ints,
     * the first 8 bytes, big-endian, of SHA-256 over the canonical CBOR of
     * {@code [parentKey, [tokens...], []]} (an unsigned integer parent, an empty tuple of extra keys).
     * These ints are what an LMCache worker reports to its controller and a scheduler sends to its
     * lookup service, and they chain on themselves, not on the 32-byte digests of {@link #next}.
     */
    public long nextIntKey(long parentKey, int[] tokens, int from, int to) {
        Objects.checkFromToIndex(from, to, tokens.length);
        Scratch s = SCRATCH.get();
        s.cbor.reset();
        s.cbor.arrayHead(3);
        s.cbor.writeUnsigned(parentKey);
        s.cbor.writeIntArray(tokens, from, to);
        s.cbor.arrayHead(0);
        s.sha256.update(s.cbor.buffer(), 0, s.cbor.length());
        return firstEightBytes(s.sha256.digest());
    }

    /** The start of LMCache's integer chain: {@link #noneHash()} folded to its first 8 bytes, big-endian. */
    public long noneIntKey() {
        return firstEightBytes(noneHash.toBytes());
    }

    /**
     * The chain of {@code form} over {@code tokens}: LMCache's integer keys ({@link #intChain}) or
     * vLLM's digests ({@link #chain(int[], int, boolean)}).
     */
    public List<ChunkHash> chain(int[] tokens, int chunkSize, boolean includePartial, StorageKeys form) {
        return form == StorageKeys.LMCACHE ? intChain(tokens, chunkSize, includePartial) : chain(tokens, chunkSize, includePartial);
    }

    /**
     * LMCache's current chain over {@code tokens} ({@link #nextIntKey} from {@link #noneIntKey}), one
     * integer-form {@link ChunkHash} per consecutive {@code chunkSize}-token chunk; a final shorter
     * chunk only if {@code includePartial}. Long chains take the same two-thread pipeline as
     * {@link #chain(int[], int, boolean)}.
     */
    public List<ChunkHash> intChain(int[] tokens, int chunkSize, boolean includePartial) {
        if (chunkSize < 1) {
            throw new IllegalArgumentException("chunk size must be at least 1, was " + chunkSize);
        }
        int end = includePartial ? tokens.length : tokens.length - tokens.length % chunkSize;
        ChunkHash[] hashes = new ChunkHash[(int) (((long) end + chunkSize - 1) / chunkSize)];
        Scratch s = SCRATCH.get();
        long parent = noneIntKey();
        if (ChainPipeline.worthIt(hashes.length)) {
            ChainPipeline.intChain(parent, tokens, end, chunkSize, hashes, s.pipelineBuffer(hashes.length, chunkSize), s.sha256);
            return List.of(hashes);
        }
        for (int c = 0; c < hashes.length; c++) {
            int start = c * chunkSize;
            parent = nextIntKey(parent, tokens, start, Math.min(start + chunkSize, end));
            hashes[c] = ChunkHash.ofLong(parent);
        }
        return List.of(hashes);
    }

    /**
     * The hash of a segment {@code tokens[from, to)} in {@code form} (LMCache's segment database
     * hashes each segment without a parent): LMCache's current form canonicalises that missing
     * parent to {@code NONE_HASH}, so the key is {@link #nextIntKey} after {@link #noneIntKey};
     * the digest form is {@link #unchained}.
     */
    public ChunkHash segment(int[] tokens, int from, int to, StorageKeys form) {
        return form == StorageKeys.LMCACHE ? ChunkHash.ofLong(nextIntKey(noneIntKey(), tokens, from, to))
                : unchained(tokens, from, to);
    }

    /** The extra key that sets a segment's key apart from every prefix chunk's ({@link #segmentApart}). */
    static final String SEGMENT_EXTRA_KEY = "lmcache4j.segment";

    /**
     * The hash of a segment that shares an engine with prefix chunks. In LMCache's integer form
     * {@link #segment} is {@code [NONE_HASH, [tokens], []]}, exactly the first prefix chunk's input
     * when the tokens are the same; here the extra keys hold {@value #SEGMENT_EXTRA_KEY} instead of
     * nothing, and a prefix chunk's are always empty, so no prefix key can equal a segment key. The
     * digest form is already apart: a segment's parent is CBOR null, a chunk's a byte string.
     */
    ChunkHash segmentApart(int[] tokens, int from, int to, StorageKeys form) {
        if (form != StorageKeys.LMCACHE) {
            return unchained(tokens, from, to);
        }
        Objects.checkFromToIndex(from, to, tokens.length);
        Scratch s = SCRATCH.get();
        s.cbor.reset();
        s.cbor.arrayHead(3);
        s.cbor.writeUnsigned(noneIntKey());
        s.cbor.writeIntArray(tokens, from, to);
        s.cbor.arrayHead(1);
        s.cbor.writeText(SEGMENT_EXTRA_KEY);
        s.sha256.update(s.cbor.buffer(), 0, s.cbor.length());
        return ChunkHash.ofLong(firstEightBytes(s.sha256.digest()));
    }

    static long firstEightBytes(byte[] digest) {
        long bits = 0;
        for (int i = 0; i < Long.BYTES; i++) {
            bits = (bits << 8) | (digest[i] & 0xff);
        }
        return bits;
    }

    /**
     * The exact bytes {@link #next} hashes for this chunk (a fresh array): for tests, benchmarks
     * and for comparing with other implementations.
     */
    public byte[] cborInput(ChunkHash parent, int[] tokens, int from, int to) {
        Objects.requireNonNull(parent, "parent");
        Objects.checkFromToIndex(from, to, tokens.length);
        CborEncoder cbor = new CborEncoder(16 + 5 * (to - from));
        encode(cbor, parent, tokens, from, to);
        return cbor.toByteArray();
    }

    /** {@code [parent, [tokens...], null]}; a null parent is written as CBOR null. */
    private static void encode(CborEncoder cbor, ChunkHash parent, int[] tokens, int from, int to) {
        cbor.reset();
        cbor.arrayHead(3);
        if (parent == null) {
            cbor.writeNull();
        } else {
            cbor.writeBytes(parent);
        }
        cbor.writeIntArray(tokens, from, to);
        cbor.writeNull(); // extra keys (multimodal, LoRA): always None in LMCache
    }

    @Override
    public String toString() {
        return "ChunkHasher[" + algorithm.lmcacheName() + ", NONE_HASH "
                + seed.map(s -> "from seed '" + s + "'").orElse("random or given") + "]";
    }

    private static final class Scratch {
        final CborEncoder cbor = new CborEncoder(2048);
        final MessageDigest sha256;

        Scratch() {
            try {
                sha256 = MessageDigest.getInstance("SHA-256");
            } catch (NoSuchAlgorithmException e) {
                throw new IllegalStateException("this JDK has no SHA-256, which every JDK must provide", e);
            }
        }

        private byte[] pipeline = new byte[0];

        /** The pipeline's buffer, grown to the largest chain seen on this thread and reused. */
        byte[] pipelineBuffer(int chunks, int chunkSize) {
            long bytes = ChainPipeline.bufferBytes(chunks, chunkSize);
            if (bytes > Integer.MAX_VALUE - 16) {
                throw new IllegalArgumentException(chunks + " chunks of " + chunkSize + " tokens are too many for one chain");
            }
            if (pipeline.length < bytes) {
                pipeline = new byte[(int) bytes];
            }
            return pipeline;
        }

        /** SHA-256 of what {@link #cbor} holds; the digest array becomes the hash without a copy. */
        ChunkHash digest() {
            sha256.update(cbor.buffer(), 0, cbor.length());
            return ChunkHash.wrap(sha256.digest());
        }
    }
}
