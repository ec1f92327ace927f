package lmcache4j.engine.remote.redis;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.OptionalInt;
import java.util.zip.CRC32C;

import lmcache4j.engine.remote.RemoteMetadata;

/**
 * The manifest of a chunk in the {@link RedisLayout.Split split layout}, written after all its parts:
 * little-endian {@code "L4JS"}, version 1, the part size, the part count, LMCache's 28-byte
 * {@link RemoteMetadata}, the CRC32C of each part, then the CRC32C of everything before it. The part
 * CRCs make a part that is missing, stale (rewritten by another writer) or corrupt a detected miss;
 * the last CRC makes a truncated or damaged manifest one. The reader takes the part size from the
 * manifest, not from its own configuration, so writers with other part sizes stay readable.
 *
 * @param metadata  the chunk's header (its length is the payload's)
 * @param partBytes the size of every part but the last
 * @param partCrcs  the CRC32C of each part, in order
 */
record SplitManifest(RemoteMetadata metadata, int partBytes, int[] partCrcs) {
    static final int MAGIC = 'L' | '4' << 8 | 'J' << 16 | 'S' << 24; // "L4JS" in little-endian byte order
    static final int VERSION = 1;
    /** Magic, version, part size, part count. */
    static final int FIXED = 16;

    SplitManifest {
        long expected = (metadata.length() + (long) partBytes - 1) / partBytes;
        if (partBytes <= 0 || partCrcs.length != Math.max(1, expected)) {
            throw new IllegalArgumentException("manifest of " + metadata.length() + " bytes in parts of " + partBytes
                    + " needs " + Math.max(1, expected) + " part checksums, has " + partCrcs.length);
        }
    }

    int parts() {
        return partCrcs.length;
    }

    /** Part {@code i}'s offset in the payload. */
    long offsetOf(int i) {
        return (long) i * partBytes;
    }

    /** Part {@code i}'s length. */
    int lengthOf(int i) {
        return (int) Math.min(partBytes, metadata.length() - offsetOf(i));
    }

    /** Part {@code i} of {@code payload}. */
    MemorySegment slice(MemorySegment payload, int i) {
        return payload.asSlice(offsetOf(i), lengthOf(i));
    }

    /** The manifest's bytes. */
    byte[] toBytes() {
        ByteBuffer b = ByteBuffer.allocate(FIXED + RemoteMetadata.BYTES + 4 * partCrcs.length + 4).order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(MAGIC).putInt(VERSION).putInt(partBytes).putInt(partCrcs.length);
        metadata.encode(b);
        for (int crc : partCrcs) {
            b.putInt(crc);
        }
        b.putInt((int) crc32c(b.array(), b.position()));
        return b.array();
    }

    /**
     * The manifest in {@code raw}.
     *
     * @throws IllegalArgumentException saying what is wrong (short, not a manifest, a bad checksum)
     */
    static SplitManifest decode(ByteBuffer raw) {
        ByteBuffer b = raw.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        int n = b.remaining();
        OptionalInt parts = partCountIn(raw);
        if (parts.isEmpty()) {
            throw new IllegalArgumentException("not a split-layout manifest (" + n + " bytes without the L4JS header)");
        }
        int expected = FIXED + RemoteMetadata.BYTES + 4 * parts.getAsInt() + 4;
        if (n != expected) {
            throw new IllegalArgumentException("a manifest of " + n + " bytes, expected " + expected + " for "
                    + parts.getAsInt() + " parts (truncated?)");
        }
        byte[] bytes = new byte[n];
        b.get(b.position(), bytes);
        long crc = crc32c(bytes, n - 4);
        long stored = Integer.toUnsignedLong(b.getInt(b.position() + n - 4));
        if (crc != stored) {
            throw new IllegalArgumentException(String.format("a manifest whose CRC32C is %08x, not the stored %08x", crc, stored));
        }
        ByteBuffer body = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
        body.position(8);
        int partBytes = body.getInt();
        body.getInt();
        RemoteMetadata metadata = RemoteMetadata.decode(body); // advances past the header
        int[] crcs = new int[parts.getAsInt()];
        for (int i = 0; i < crcs.length; i++) {
            crcs[i] = body.getInt();
        }
        return new SplitManifest(metadata, partBytes, crcs);
    }

    /**
     * The part count a manifest's fixed header states, even when the rest is damaged, so that a
     * reader can delete the parts of a manifest it cannot use; empty when not even that is readable.
     */
    static OptionalInt partCountIn(ByteBuffer raw) {
        ByteBuffer b = raw.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        int at = b.position();
        if (b.remaining() < FIXED || b.getInt(at) != MAGIC || b.getInt(at + 4) != VERSION) {
            return OptionalInt.empty();
        }
        int parts = b.getInt(at + 12);
        // Part count bound: a 2 GiB payload (RemoteMetadata's int length) in 1 MiB parts.
        return parts >= 1 && parts <= 2048 ? OptionalInt.of(parts) : OptionalInt.empty();
    }

    /** CRC32C of {@code part} (the JDK's intrinsic, on off-heap memory without a copy). */
    static int crcOf(MemorySegment part) {
        return (int) MetadataTrailer.crc32c(part);
    }

    private static long crc32c(byte[] bytes, int length) {
        CRC32C c = new CRC32C();
        c.update(bytes, 0, length);
        return c.getValue();
    }
}
