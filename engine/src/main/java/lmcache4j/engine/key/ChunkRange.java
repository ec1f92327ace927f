package lmcache4j.engine.key;

import java.util.Objects;

/**
 * One chunk of a request: the tokens {@code [start, end)} and their cache key (LMCache's
 * {@code (start, end, key)} triple from {@code process_tokens}).
 *
 * @param start first token, from 0
 * @param end   one past the last token, at least {@code start}
 * @param key   the chunk's key
 */
public record ChunkRange(int start, int end, CacheEngineKey key) {
    public ChunkRange {
        TokenMask.checkRange(start, end);
        Objects.requireNonNull(key, "key");
    }

    /** Token count. */
    public int length() {
        return end - start;
    }
}
