package lmcache4j.bench.trace;

import lmcache4j.allocator.DType;
import lmcache4j.engine.key.CacheEngineKey;
import lmcache4j.engine.key.ChunkHash;

/**
 * The cache keys a replay stores a trace's blocks under: {@code chunksPerBlock} chunks per block
 * (one for 512-token chunks, two for 256), chunk {@code c} of dense block {@code b} being number
 * {@code b * chunksPerBlock + c}. A block id in Mooncake's traces already stands for its whole
 * prefix, so a chunk's hash is a fixed mix of its number (8 well-spread bytes, as a digest's are);
 * the keys are made once and reused.
 */
final class ChunkKeys {
    static final String MODEL = "lmcache4j/trace-replay";

    private final int chunksPerBlock;
    private final CacheEngineKey[] keys;

    ChunkKeys(int blocks, int chunksPerBlock) {
        this.chunksPerBlock = chunksPerBlock;
        this.keys = new CacheEngineKey[Math.multiplyExact(blocks, chunksPerBlock)];
    }

    int chunksPerBlock() {
        return chunksPerBlock;
    }

    /** The key of chunk {@code c} of block {@code block}. */
    CacheEngineKey key(int block, int c) {
        int n = block * chunksPerBlock + c;
        CacheEngineKey k = keys[n];
        if (k == null) {
            k = new CacheEngineKey(MODEL, 1, 0, ChunkHash.of(bytes(n)), DType.BFLOAT16);
            keys[n] = k;
        }
        return k;
    }

    /** The chunk number a pattern fill encodes (the bytes mode writes it into every chunk). */
    static long mix(long n) {
        long x = n + 0x9E3779B97F4A7C15L;
        x = (x ^ (x >>> 30)) * 0xBF58476D1CE4E5B9L;
        x = (x ^ (x >>> 27)) * 0x94D049BB133111EBL;
        return x ^ (x >>> 31);
    }

    private static byte[] bytes(int n) {
        long x = mix(n);
        byte[] b = new byte[16];
        for (int i = 0; i < 8; i++) {
            b[i] = (byte) (x >>> (56 - 8 * i));
            b[8 + i] = (byte) ((long) n >>> (56 - 8 * i));
        }
        return b;
    }
}
