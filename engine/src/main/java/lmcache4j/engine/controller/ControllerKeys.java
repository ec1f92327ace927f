package lmcache4j.engine.controller;

import lmcache4j.engine.key.CacheEngineKey;
import lmcache4j.engine.key.ChunkHash;

/**
 * The one place where a chunk becomes a cache-controller key. LMCache's controller keys chunks by
 * a Python int; lmcache4j folds its chunk digest (32 bytes of {@code sha256_cbor}) into the first
 * 8 digest bytes read as an unsigned big-endian 64-bit integer, kept in a Java {@code long}'s bits
 * (negative when the top bit is set; written on the wire as uint64). Workers report admits and
 * evicts with it and the controller hashes lookup prompts to it, so both must call this.
 */
public final class ControllerKeys {
    private ControllerKeys() {
    }

    /** The controller key of a chunk digest: its first 8 bytes, big-endian (zero-padded on the right when shorter). */
    public static long fold(ChunkHash hash) {
        long bits = 0;
        int n = Math.min(Long.BYTES, hash.length());
        for (int i = 0; i < Long.BYTES; i++) {
            bits = (bits << 8) | (i < n ? hash.byteAt(i) & 0xff : 0);
        }
        return bits;
    }

    /** The controller key of a digest given as bytes. */
    public static long fold(byte[] digest) {
        return fold(ChunkHash.of(digest));
    }

    /** The controller key of a cache key (its chunk hash's). */
    public static long fold(CacheEngineKey key) {
        return fold(key.chunkHash());
    }

    /** The key as the Python int LMCache would print: unsigned decimal. */
    public static String toDecimal(long key) {
        return Long.toUnsignedString(key);
    }
}
