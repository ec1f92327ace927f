package lmcache4j.engine.p2p;

import java.lang.foreign.MemorySegment;
import java.util.Optional;
import java.util.zip.CRC32C;

import lmcache4j.allocator.DType;
import lmcache4j.allocator.MemoryFormat;
import lmcache4j.allocator.TensorShape;
import lmcache4j.engine.key.CacheKey;
import lmcache4j.engine.key.CacheKeys;
import lmcache4j.engine.remote.RemoteMetadata;

/**
 * How a peer's chunk is checked: beside each chunk, a transfer server answers a GET for the chunk's
 * key with the tag {@value #TAG} by the CRC32C of the chunk's payload it holds now (4 bytes,
 * little-endian), and the fetching tier compares it with the CRC32C of the bytes it received. The
 * checksum key is an ordinary key string (a tag, as LMCache's key grammar allows), so it travels in
 * the {@code lm://} frames unchanged.
 */
public final class P2pChecksums {
    /** The tag that turns a chunk key into its checksum's key. */
    public static final String TAG = "lmcache4j_p2p%crc32c";
    /** The checksum entry's payload bytes. */
    public static final int BYTES = 4;
    private static final String SUFFIX = "@" + TAG;

    private P2pChecksums() {
    }

    /** The key a transfer server answers with {@code key}'s checksum. */
    public static CacheKey checksumKey(CacheKey key) {
        return CacheKeys.parse(key.toKeyString() + SUFFIX);
    }

    /** The chunk key string a checksum key string asks about, or empty when it is not a checksum key. */
    public static Optional<String> chunkKeyOf(String keyString) {
        return keyString.endsWith(SUFFIX) ? Optional.of(keyString.substring(0, keyString.length() - SUFFIX.length()))
                : Optional.empty();
    }

    /** The metadata of a checksum entry: {@value #BYTES} bytes, binary. */
    public static RemoteMetadata metadata() {
        return new RemoteMetadata(BYTES, MemoryFormat.BINARY, Optional.of(DType.UINT8), TensorShape.of(BYTES, 0, 0, 0));
    }

    /** CRC32C of {@code payload} (the JDK's intrinsic, reading off-heap memory in place). */
    public static int crc32c(MemorySegment payload) {
        CRC32C crc = new CRC32C();
        crc.update(payload.asByteBuffer());
        return (int) crc.getValue();
    }
}
