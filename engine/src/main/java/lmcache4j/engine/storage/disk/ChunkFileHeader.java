package lmcache4j.engine.storage.disk;

import java.util.Objects;

import lmcache4j.allocator.DType;
import lmcache4j.allocator.MemoryFormat;
import lmcache4j.allocator.TensorShape;

/**
 * The parsed header of a chunk file.
 *
 * @param keyString     the chunk's key, as {@code CacheKey.toKeyString()} wrote it
 * @param format        the object's memory format
 * @param dtype         the element type
 * @param shape         the tensor shape
 * @param payloadLength the payload's true length in bytes (the file pads it to a 4 KiB multiple)
 * @param crc32c        CRC32C of the {@code payloadLength} payload bytes
 */
public record ChunkFileHeader(String keyString, MemoryFormat format, DType dtype, TensorShape shape,
                              long payloadLength, int crc32c) {

    /** Bytes the header takes on disk; the payload starts at this offset. */
    public static final int BYTES = 4096;

    /** The unit the payload is padded to, so that the file can be read and written with O_DIRECT. */
    public static final int ALIGNMENT = 4096;

    public ChunkFileHeader {
        Objects.requireNonNull(keyString, "keyString");
        Objects.requireNonNull(format, "format");
        Objects.requireNonNull(dtype, "dtype");
        Objects.requireNonNull(shape, "shape");
        if (payloadLength < 0) {
            throw new IllegalArgumentException("payload length must be >= 0, was " + payloadLength);
        }
    }

    /** The payload rounded up to {@link #ALIGNMENT}: the bytes it takes in the file. */
    public long paddedPayloadLength() {
        return (payloadLength + ALIGNMENT - 1) & -(long) ALIGNMENT;
    }

    /** The exact size of a complete file with this header. */
    public long fileBytes() {
        return BYTES + paddedPayloadLength();
    }
}
