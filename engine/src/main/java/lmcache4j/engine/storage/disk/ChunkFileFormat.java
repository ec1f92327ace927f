package lmcache4j.engine.storage.disk;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.zip.CRC32C;

import lmcache4j.allocator.DType;
import lmcache4j.allocator.MemoryFormat;
import lmcache4j.allocator.TensorShape;

/**
 * The on-disk header of a chunk file, version 1. Little-endian, then zero padding to
 * {@link ChunkFileHeader#BYTES} so the payload starts 4 KiB-aligned:
 *
 * <pre>
 * offset      size  field
 * 0           8     magic "LMC4JKV\0"
 * 8           4     version (1)
 * 12          4     header length (4096: where the payload starts)
 * 16          4     memory format (MemoryFormat.code(), LMCache's codes)
 * 20          4     dtype code (the table in {@link #dtypeCode}: LMCache's metadata codes 2..8, then 9..15)
 * 24          4     rank r (1..16)
 * 28          4r    dims
 * 28+4r       8     payload length (true bytes; the file pads the payload to a 4 KiB multiple with zeros)
 * 36+4r       4     CRC32C of the payload
 * 40+4r       4     key string length k (UTF-8 bytes)
 * 44+4r       k     key string, UTF-8
 * 44+4r+k     4     CRC32C of bytes [0, 44+4r+k)
 * ...               zeros up to 4096
 * </pre>
 */
final class ChunkFileFormat {
    static final int VERSION = 1;
    static final int MAX_RANK = 16;
    private static final byte[] MAGIC = {'L', 'M', 'C', '4', 'J', 'K', 'V', 0};
    private static final MemorySegment MAGIC_SEGMENT = MemorySegment.ofArray(MAGIC);
    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final int OFF_VERSION = 8;
    private static final int OFF_HEADER_LENGTH = 12;
    private static final int OFF_FORMAT = 16;
    private static final int OFF_DTYPE = 20;
    private static final int OFF_RANK = 24;
    private static final int OFF_DIMS = 28;
    /** Bytes of the fixed fields, without dims and key bytes. */
    private static final int FIXED = OFF_DIMS + 8 + 4 + 4 + 4;

    private ChunkFileFormat() {
    }

    /** Whether a file's first bytes decode, and if not whether it is ours at all. */
    enum Verdict { VALID, CORRUPT, FOREIGN }

    /** A decoding result: the header when valid (or parsed but inconsistent), else why not. */
    record Parsed(Verdict verdict, ChunkFileHeader header, String reason) {
        static Parsed valid(ChunkFileHeader h) {
            return new Parsed(Verdict.VALID, h, "");
        }

        static Parsed corrupt(String why) {
            return new Parsed(Verdict.CORRUPT, null, why);
        }

        /** A header that passes its own checks but whose fields disagree: kept for diagnostics and tests. */
        static Parsed inconsistent(ChunkFileHeader h, String why) {
            return new Parsed(Verdict.CORRUPT, h, why);
        }

        static Parsed foreign(String why) {
            return new Parsed(Verdict.FOREIGN, null, why);
        }
    }

    /** Bytes of the magic every file the cache writes starts with, temp and probe files included. */
    static final int MAGIC_BYTES = 8;

    /** Whether the first {@code validBytes} of {@code buf} begin with the chunk magic. */
    static boolean startsWithMagic(MemorySegment buf, long validBytes) {
        return validBytes >= MAGIC.length && MemorySegment.mismatch(buf, 0, MAGIC.length, MAGIC_SEGMENT, 0, MAGIC.length) == -1;
    }

    /** Writes the magic at the start of {@code buf}. */
    static void writeMagic(MemorySegment buf) {
        MemorySegment.copy(MAGIC, 0, buf, JAVA_BYTE, 0, MAGIC.length);
    }

    /** The longest key string (UTF-8 bytes) a header of rank {@code rank} can hold. */
    static int maxKeyBytes(int rank) {
        return ChunkFileHeader.BYTES - FIXED - 4 * rank;
    }

    /**
     * Writes the header into {@code buf} (at least {@link ChunkFileHeader#BYTES} long), zero padding
     * included.
     *
     * @throws IllegalArgumentException when the rank or the key is too large for a header
     */
    static void encode(MemorySegment buf, byte[] key, MemoryFormat format, DType dtype, TensorShape shape,
                       long payloadLength, int payloadCrc) {
        int rank = shape.rank();
        if (rank > MAX_RANK) {
            throw new IllegalArgumentException("shape " + shape + " has rank " + rank + "; chunk files hold at most " + MAX_RANK);
        }
        if (key.length == 0 || key.length > maxKeyBytes(rank)) {
            throw new IllegalArgumentException("key string of " + key.length + " UTF-8 bytes does not fit a chunk file header "
                    + "(1.." + maxKeyBytes(rank) + " bytes for rank " + rank + ")");
        }
        buf.asSlice(0, ChunkFileHeader.BYTES).fill((byte) 0);
        writeMagic(buf);
        buf.set(INT, OFF_VERSION, VERSION);
        buf.set(INT, OFF_HEADER_LENGTH, ChunkFileHeader.BYTES);
        buf.set(INT, OFF_FORMAT, format.code());
        buf.set(INT, OFF_DTYPE, dtypeCode(dtype));
        buf.set(INT, OFF_RANK, rank);
        long off = OFF_DIMS;
        for (int i = 0; i < rank; i++, off += 4) {
            buf.set(INT, off, shape.dim(i));
        }
        buf.set(LONG, off, payloadLength);
        buf.set(INT, off + 8, payloadCrc);
        buf.set(INT, off + 12, key.length);
        MemorySegment.copy(key, 0, buf, JAVA_BYTE, off + 16, key.length);
        long end = off + 16 + key.length;
        buf.set(INT, end, crc32c(buf.asSlice(0, end)));
    }

    /** Decodes the first {@code validBytes} bytes of {@code buf}, as read from the start of a file. */
    static Parsed decode(MemorySegment buf, long validBytes) {
        if (!startsWithMagic(buf, validBytes)) {
            return Parsed.foreign("it does not start with the lmcache4j chunk magic");
        }
        if (validBytes < ChunkFileHeader.BYTES) {
            return Parsed.corrupt("header truncated: " + validBytes + " of " + ChunkFileHeader.BYTES + " bytes");
        }
        int version = buf.get(INT, OFF_VERSION);
        if (version != VERSION) {
            return Parsed.corrupt("unsupported chunk file version " + version + " (this build reads " + VERSION + ")");
        }
        int headerLength = buf.get(INT, OFF_HEADER_LENGTH);
        if (headerLength != ChunkFileHeader.BYTES) {
            return Parsed.corrupt("header length " + headerLength + ", expected " + ChunkFileHeader.BYTES);
        }
        int rank = buf.get(INT, OFF_RANK);
        if (rank < 1 || rank > MAX_RANK) {
            return Parsed.corrupt("rank " + rank + " outside 1.." + MAX_RANK);
        }
        long off = OFF_DIMS + 4L * rank;
        int keyLength = buf.get(INT, off + 12);
        if (keyLength < 1 || keyLength > maxKeyBytes(rank)) {
            return Parsed.corrupt("key length " + keyLength + " outside 1.." + maxKeyBytes(rank));
        }
        long end = off + 16 + keyLength;
        int storedCrc = buf.get(INT, end);
        int actualCrc = crc32c(buf.asSlice(0, end));
        if (storedCrc != actualCrc) {
            return Parsed.corrupt(String.format("header CRC32C mismatch: stored %08x, computed %08x", storedCrc, actualCrc));
        }
        MemoryFormat format;
        DType dtype;
        TensorShape shape;
        String key;
        try {
            format = MemoryFormat.fromCode(buf.get(INT, OFF_FORMAT));
            dtype = dtypeFromCode(buf.get(INT, OFF_DTYPE));
            int[] dims = new int[rank];
            for (int i = 0; i < rank; i++) {
                dims[i] = buf.get(INT, OFF_DIMS + 4L * i);
            }
            shape = TensorShape.of(dims);
            key = StandardCharsets.UTF_8.newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT).onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(buf.asSlice(off + 16, keyLength).asByteBuffer()).toString();
        } catch (IllegalArgumentException e) {
            return Parsed.corrupt(e.getMessage());
        } catch (CharacterCodingException e) {
            return Parsed.corrupt("key string is not valid UTF-8");
        }
        long payloadLength = buf.get(LONG, off);
        if (payloadLength < 0) {
            return Parsed.corrupt("payload length " + payloadLength + " is negative");
        }
        ChunkFileHeader header = new ChunkFileHeader(key, format, dtype, shape, payloadLength, buf.get(INT, off + 8));
        String disagreement = disagreement(format, dtype, shape, payloadLength);
        return disagreement == null ? Parsed.valid(header) : Parsed.inconsistent(header, disagreement);
    }

    /**
     * Why a header's fields cannot describe one chunk the allocator could hold, or null when they
     * can. A forged header passes its own CRC, so this is what stops a shape that disagrees with
     * the payload from reaching an allocation or a copy.
     */
    static String disagreement(MemoryFormat format, DType dtype, TensorShape shape, long payloadLength) {
        long shapeBytes;
        try {
            format.validate(shape);
            shapeBytes = shape.byteSize(dtype);
            if (shapeBytes > 0 && format.tokenCount(shape) < 1) {
                return "shape " + shape + " holds no token in format " + format;
            }
        } catch (IllegalArgumentException | IndexOutOfBoundsException e) {
            return e.getMessage();
        }
        if (shapeBytes == 0) {
            return "shape " + shape + " has no element: no chunk is empty";
        }
        if (shapeBytes > Long.MAX_VALUE / 2) {
            return "shape " + shape + " of " + dtype + " is " + shapeBytes + " bytes: larger than any file";
        }
        if (payloadLength != shapeBytes) {
            return "payload length " + payloadLength + " disagrees with shape " + shape + " of " + dtype + " ("
                    + shapeBytes + " bytes)";
        }
        return null;
    }

    /** CRC32C of a segment's bytes, computed in place (no copy to the heap for native segments). */
    static int crc32c(MemorySegment bytes) {
        CRC32C crc = new CRC32C();
        long done = 0;
        long size = bytes.byteSize();
        while (done < size) {
            long n = Math.min(size - done, 1L << 30);
            ByteBuffer bb = bytes.asSlice(done, n).asByteBuffer();
            crc.update(bb);
            done += n;
        }
        return (int) crc.getValue();
    }

    /**
     * lmcache4j's stable dtype code: LMCache's remote-metadata code where it has one (2..8), then
     * 9..15 for the types it cannot express. Never reorder; only append.
     */
    static int dtypeCode(DType t) {
        return switch (t) {
            case FLOAT16 -> 2;
            case BFLOAT16 -> 3;
            case FLOAT32 -> 4;
            case FLOAT64 -> 5;
            case UINT8 -> 6;
            case FLOAT8_E4M3FN -> 7;
            case FLOAT8_E5M2 -> 8;
            case FLOAT8_E4M3FNUZ -> 9;
            case FLOAT8_E5M2FNUZ -> 10;
            case INT8 -> 11;
            case INT16 -> 12;
            case INT32 -> 13;
            case INT64 -> 14;
            case BOOL -> 15;
        };
    }

    /** The inverse of {@link #dtypeCode}. */
    static DType dtypeFromCode(int code) {
        return switch (code) {
            case 2 -> DType.FLOAT16;
            case 3 -> DType.BFLOAT16;
            case 4 -> DType.FLOAT32;
            case 5 -> DType.FLOAT64;
            case 6 -> DType.UINT8;
            case 7 -> DType.FLOAT8_E4M3FN;
            case 8 -> DType.FLOAT8_E5M2;
            case 9 -> DType.FLOAT8_E4M3FNUZ;
            case 10 -> DType.FLOAT8_E5M2FNUZ;
            case 11 -> DType.INT8;
            case 12 -> DType.INT16;
            case 13 -> DType.INT32;
            case 14 -> DType.INT64;
            case 15 -> DType.BOOL;
            default -> throw new IllegalArgumentException("unknown dtype code " + code + " (valid: 2..15)");
        };
    }
}
