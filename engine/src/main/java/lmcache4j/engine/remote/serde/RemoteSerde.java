package lmcache4j.engine.remote.serde;

import java.lang.foreign.MemorySegment;
import java.util.Optional;

import lmcache4j.allocator.MemoryObj;
import lmcache4j.engine.remote.RemoteMetadata;
import lmcache4j.engine.storage.MemoryProvider;

/**
 * How the remote tier turns a KV object into what it stores ({@code remote_serde}, spec §4.5–4.6).
 *
 * <ul>
 *   <li>{@code naive}: the object's own header and bytes, as LMCache writes them; interoperable
 *       with LMCache in both directions.</li>
 *   <li>{@code lz4}, {@code zstd}: lmcache4j-only (LMCache has no such serde and cannot read
 *       these entries). The stored object is a byte buffer: header {@code BINARY_BUFFER}, no
 *       dtype, shape {@code [n, 0, 0, 0]}; its {@code n} payload bytes are one magic byte naming
 *       the algorithm ({@link CompressingSerde#LZ4_MAGIC}, {@link CompressingSerde#ZSTD_MAGIC}),
 *       the original object's 28-byte {@link RemoteMetadata}, the CRC32C of the original bytes,
 *       then the compressed bytes. Readers
 *       configured with either algorithm read both, and read naive entries as naive, so changing
 *       the serde orphans nothing.</li>
 * </ul>
 */
public interface RemoteSerde {

    /** The {@code remote_serde} name. */
    String name();

    /**
     * What to store for {@code obj}: the header, the payload, and what to release once the put
     * has completed (successfully or not).
     *
     * @throws IllegalArgumentException when LMCache's header cannot describe {@code obj}
     */
    Serialized serialize(MemoryObj obj);

    /**
     * The KV object for an object read from the remote store (allocated by its outer header).
     * Takes ownership of {@code stored}: it is either returned or released. Empty (a miss) when
     * the payload is corrupt or no memory could be had.
     *
     * @param memory where an object decoded from {@code stored} is allocated
     */
    Optional<MemoryObj> deserialize(MemoryObj stored, MemoryProvider memory);

    /** The counters of this serde's work. */
    Counters counters();

    /** A serialized object. {@link #close()} releases what backs the payload; call it once, after the put. */
    record Serialized(RemoteMetadata metadata, MemorySegment payload, AutoCloseable release) implements AutoCloseable {
        @Override
        public void close() {
            try {
                release.close();
            } catch (Exception e) {
                throw new IllegalStateException("cannot release a serialized remote object", e);
            }
        }
    }

    /**
     * Bytes before and after compression, and the time spent; zero for naive.
     *
     * @param rawBytes            bytes of the objects compressed
     * @param storedBytes         bytes of the payloads they became (magic and inner header included)
     * @param compressNanos       nanoseconds spent compressing
     * @param decompressedBytes   bytes of the objects decompressed
     * @param decompressNanos     nanoseconds spent decompressing
     * @param corrupt             compressed entries read back that were corrupt (served as misses)
     */
    record Counters(long rawBytes, long storedBytes, long compressNanos, long decompressedBytes, long decompressNanos,
                    long corrupt) {
        public static final Counters NONE = new Counters(0, 0, 0, 0, 0, 0);

        /** {@code rawBytes - storedBytes}: bytes compression saved on puts. */
        public long bytesSaved() {
            return rawBytes - storedBytes;
        }
    }

    /** The serde {@code remote_serde} names: naive, lz4 or zstd. */
    static RemoteSerde forName(String name) {
        return switch (name) {
            case "naive" -> NaiveSerde.INSTANCE;
            case "lz4" -> new CompressingSerde(CompressingSerde.Algorithm.LZ4);
            case "zstd" -> new CompressingSerde(CompressingSerde.Algorithm.ZSTD);
            default -> throw new IllegalArgumentException("unknown remote_serde '" + name + "' (valid: naive, lz4, zstd)");
        };
    }
}
