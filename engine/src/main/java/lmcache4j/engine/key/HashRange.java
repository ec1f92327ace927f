package lmcache4j.engine.key;

import java.util.Objects;

/**
 * One chunk of a request with its raw hash instead of a key (LMCache's {@code make_key=False}),
 * for example to ship hashes rather than tokens to a lookup server.
 *
 * @param start first token, from 0
 * @param end   one past the last token, at least {@code start}
 * @param hash  the chunk's hash
 */
public record HashRange(int start, int end, ChunkHash hash) {
    public HashRange {
        TokenMask.checkRange(start, end);
        Objects.requireNonNull(hash, "hash");
    }

    /** Token count. */
    public int length() {
        return end - start;
    }
}
