package lmcache4j.engine.p2p;

import java.lang.foreign.MemorySegment;
import java.util.zip.CRC32C;

/**
 * How a peer's chunk is checked. A P2P transfer server answers a GET with LMCache's reply header,
 * whose last field ({@code location}) LMCache's server leaves 0; lmcache4j's transfer servers put
 * there the CRC32C of the payload that follows, computed from the object they send (once per stored
 * object). The fetching tier compares it with the CRC32C of the bytes it received. The checksum
 * thus travels in the same reply as the chunk: no second request, no window in which the chunk
 * could change between the two.
 */
public final class P2pChecksums {
    private P2pChecksums() {
    }

    /** CRC32C of {@code payload} (the JDK's intrinsic, reading off-heap memory in place). */
    public static int crc32c(MemorySegment payload) {
        CRC32C crc = new CRC32C();
        crc.update(payload.asByteBuffer());
        return (int) crc.getValue();
    }
}
