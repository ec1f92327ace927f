package lmcache4j.engine.pd.wire;

import java.util.List;
import java.util.Objects;

/**
 * A sender's request for room in a receiver's PD buffer: LMCache's {@code AllocRequest}
 * ({@code lmcache/v1/storage_backend/pd_backend.py}): the chunks' keys (their key strings), their
 * memory format's code, the shape of a full chunk's object, the dtype's name, and the tokens of the
 * last chunk (which may be partial).
 *
 * @param keys          the chunk keys, in token order ({@code len(keys)} chunks)
 * @param fmt           the {@code MemoryFormat} code ({@code KV_2LTD}: 1)
 * @param shape         a full chunk's shape
 * @param dtype         the dtype as a key names it ({@code half}, {@code bfloat16}, {@code float}, ...)
 * @param lastChunkToks tokens of the last chunk
 */
public record AllocRequest(List<String> keys, int fmt, List<Integer> shape, String dtype, int lastChunkToks) {
    public AllocRequest {
        keys = List.copyOf(keys);
        shape = List.copyOf(shape);
        Objects.requireNonNull(dtype, "dtype");
    }
}
