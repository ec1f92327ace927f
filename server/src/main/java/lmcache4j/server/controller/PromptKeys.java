package lmcache4j.server.controller;

import java.util.List;
import java.util.Objects;

import lmcache4j.engine.controller.ControllerKeys;
import lmcache4j.engine.key.ChunkHash;
import lmcache4j.engine.key.ChunkHasher;

/**
 * Turns a prompt's tokens into the chunk keys the engines report, exactly as an engine's
 * {@code ChunkedTokenDatabase} cuts and hashes them (same chunk size, hash algorithm and seed;
 * the partial last chunk only with {@code save_unfull_chunk}), each chunk keyed as
 * {@code controller_chunk_keys} says ({@link ControllerKeys.Scheme}: LMCache's integer chain by
 * default).
 *
 * <p>The controller cannot learn these settings from the wire: LMCache's RegisterMsg carries no
 * chunk size, hash algorithm or seed. They are the controller's own configuration, printed at
 * start and in {@code GET /instances}; an engine configured differently simply never matches.
 */
public final class PromptKeys {
    private final int chunkSize;
    private final boolean saveUnfullChunk;
    private final ChunkHasher hasher;
    private final ControllerKeys.Scheme scheme;

    public PromptKeys(int chunkSize, boolean saveUnfullChunk, ChunkHasher hasher, ControllerKeys.Scheme scheme) {
        if (chunkSize < 1) {
            throw new IllegalArgumentException("chunk size must be at least 1 token, was " + chunkSize);
        }
        this.chunkSize = chunkSize;
        this.saveUnfullChunk = saveUnfullChunk;
        this.hasher = Objects.requireNonNull(hasher, "hasher");
        this.scheme = Objects.requireNonNull(scheme, "scheme");
    }

    /** A prompt's chunks: {@code keys[i]} covers tokens up to {@code ends[i]} (exclusive). */
    public record Chunks(long[] keys, int[] ends) {
        public int count() {
            return keys.length;
        }
    }

    /** The chunk keys of {@code tokens}, in order. */
    public Chunks of(int[] tokens) {
        List<ChunkHash> chain = hasher.chain(tokens, chunkSize, saveUnfullChunk);
        int[] ends = new int[chain.size()];
        for (int i = 0; i < ends.length; i++) {
            ends[i] = Math.min((i + 1) * chunkSize, tokens.length);
        }
        return new Chunks(ControllerKeys.keys(scheme, hasher, tokens, chain, ends), ends);
    }

    public int chunkSize() {
        return chunkSize;
    }

    public boolean saveUnfullChunk() {
        return saveUnfullChunk;
    }

    public ChunkHasher hasher() {
        return hasher;
    }

    public ControllerKeys.Scheme scheme() {
        return scheme;
    }
}
