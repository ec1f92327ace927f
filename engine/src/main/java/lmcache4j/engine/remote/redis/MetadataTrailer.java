package lmcache4j.engine.remote.redis;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.zip.CRC32C;

import lmcache4j.engine.remote.RemoteMetadata;

/**
 * lmcache4j's checksum on a Redis entry, carried after LMCache's 28-byte header in the
 * {@code <key>metadata} value: the 4 ASCII bytes {@code L4JC}, then the CRC32C of the payload as a
 * little-endian int32. LMCache reads the header with {@code struct.unpack_from}, which ignores
 * trailing bytes, so LMCache still reads entries lmcache4j wrote; entries LMCache wrote have no
 * trailer and are served unverified.
 */
final class MetadataTrailer {
    static final int MAGIC = 'L' | '4' << 8 | 'J' << 16 | 'C' << 24; // "L4JC" in little-endian byte order
    static final int BYTES = 8;
    /** {@link #crcOf} when the value has no trailer. */
    static final long ABSENT = -1;

    private MetadataTrailer() {
    }

    /** LMCache's header followed by the trailer for {@code payload}. */
    static byte[] metadataValue(RemoteMetadata metadata, MemorySegment payload) {
        byte[] header = metadata.toBytes();
        ByteBuffer out = ByteBuffer.allocate(RemoteMetadata.BYTES + BYTES).order(ByteOrder.LITTLE_ENDIAN);
        out.put(header).putInt(MAGIC).putInt((int) crc32c(payload));
        return out.array();
    }

    /** The CRC32C a metadata value carries (0..2^32-1), or {@link #ABSENT}. */
    static long crcOf(ByteBuffer metadataValue) {
        ByteBuffer b = metadataValue.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        int at = b.position() + RemoteMetadata.BYTES;
        if (b.limit() - at < BYTES || b.getInt(at) != MAGIC) {
            return ABSENT;
        }
        return Integer.toUnsignedLong(b.getInt(at + 4));
    }

    /** CRC32C of {@code payload} (the JDK's intrinsic, on off-heap memory without a copy). */
    static long crc32c(MemorySegment payload) {
        CRC32C crc = new CRC32C();
        crc.update(payload.asByteBuffer());
        return crc.getValue();
    }
}
