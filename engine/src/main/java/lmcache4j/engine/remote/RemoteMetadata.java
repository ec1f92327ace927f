package lmcache4j.engine.remote;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.BufferOverflowException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.Objects;
import java.util.Optional;

import lmcache4j.allocator.DType;
import lmcache4j.allocator.MemoryFormat;
import lmcache4j.allocator.MemoryObj;
import lmcache4j.allocator.TensorShape;

/**
 * LMCache's remote-object header ({@code lmcache/v1/protocol.py::RemoteMetadata}), byte for byte:
 * seven int32 values packed with Python's {@code struct} format {@code "iiiiiii"} in native mode,
 * which is little-endian, 4-byte ints and no padding on every platform LMCache runs on
 * (x86-64, aarch64). {@value #BYTES} bytes:
 *
 * <pre>
 * offset  0  length    payload bytes that follow the header
 * offset  4  fmt       MemoryFormat code (MemoryFormat.code())
 * offset  8  dtype     0 = none, 1 = half, 2 = float16, 3 = bfloat16, 4 = float32, 5 = float64,
 *                      6 = uint8, 7 = float8_e4m3fn, 8 = float8_e5m2
 * offset 12  shape[0]
 * offset 16  shape[1]
 * offset 20  shape[2]
 * offset 24  shape[3]
 * </pre>
 *
 * <p>fp16 is always written as 2 (in PyTorch {@code torch.half is torch.float16}, so the later
 * dict entry of {@code DTYPE_TO_INT} wins); 1 decodes as fp16 too.
 *
 * <p>Shapes: the record always holds exactly four dimensions, as the wire does. LMCache up to
 * 2025 asserted rank 4 on serialize and wrote byte objects as {@code [n, 0, 0, 0]}; LMCache 2026
 * right-pads shorter shapes with zeros ({@code _pad_shape_to_4d}) and strips trailing zeros on
 * deserialize ({@code _strip_shape_trailing_zeros}). {@link #forObject} pads like 2026 and
 * {@link #toShape()} strips like 2026. LMCache 2026 also has a multi-group form
 * ({@code 2 + 5 × groups} ints, for hybrid models); with one group it is exactly this header,
 * more groups are not supported here.
 *
 * @param length payload bytes, {@code >= 0}
 * @param format the layout of the payload
 * @param dtype  the element type, empty for LMCache's "no dtype" (byte buffers)
 * @param shape  exactly four dimensions
 */
public record RemoteMetadata(int length, MemoryFormat format, Optional<DType> dtype, TensorShape shape) {

    /** The header's size: seven int32 values. */
    public static final int BYTES = 28;

    /** The wire's shape rank. */
    public static final int RANK = 4;

    /** The highest dtype code in LMCache's {@code INT_TO_DTYPE} (float8_e5m2). */
    public static final int MAX_DTYPE_CODE = 8;

    private static final ValueLayout.OfInt INT_LE = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    public RemoteMetadata {
        Objects.requireNonNull(format, "format");
        Objects.requireNonNull(dtype, "dtype (use Optional.empty() for none)");
        Objects.requireNonNull(shape, "shape");
        if (length < 0) {
            throw new IllegalArgumentException("remote metadata length must be >= 0, was " + length);
        }
        if (shape.rank() != RANK) {
            throw new IllegalArgumentException("remote metadata needs a shape of exactly 4 dimensions "
                    + "(byte objects use [n, 0, 0, 0]), got rank " + shape.rank() + " shape " + shape);
        }
        if (dtype.isPresent() && !dtype.get().hasMetadataCode()) {
            throw new IllegalArgumentException("LMCache's remote metadata has no dtype code for "
                    + dtype.get().torchName() + "; representable: float16, bfloat16, float32, float64, uint8, "
                    + "float8_e4m3fn, float8_e5m2 (or none)");
        }
    }

    /**
     * The header for {@code obj}: its format, dtype and shape (right-padded with zeros to four
     * dimensions, as LMCache 2026 does), and {@code length} = the object's logical byte size.
     *
     * <p>LMCache writes {@code len(memory_obj.byte_array)}, which for objects from a batched
     * allocation is the aligned slot and so may include trailing padding; lmcache4j's objects
     * expose only their logical bytes, so {@code length} here is always shape × dtype. LMCache's
     * readers read the byte size of the object they allocate from shape/dtype, never more, so
     * both forms read back the same tensor.
     *
     * <p>Objects in {@link MemoryFormat#BINARY_BUFFER} get "no dtype" (code 0), like LMCache's
     * {@code BytesBufferMemoryObj}.
     *
     * @throws IllegalArgumentException when the object is over 2 GiB (the length field is int32),
     *                                  its rank is over 4, or LMCache has no code for its dtype
     */
    public static RemoteMetadata forObject(MemoryObj obj) {
        long size = obj.byteSize();
        if (size > Integer.MAX_VALUE) {
            throw new IllegalArgumentException(obj + " is " + size + " bytes; LMCache's int32 length field holds at most "
                    + Integer.MAX_VALUE);
        }
        Optional<DType> dtype = obj.format() == MemoryFormat.BINARY_BUFFER ? Optional.empty() : Optional.of(obj.dtype());
        return new RemoteMetadata((int) size, obj.format(), dtype, padTo4(obj.shape()));
    }

    /** {@code shape} right-padded with zero dimensions to rank 4 (LMCache 2026's {@code _pad_shape_to_4d}). */
    public static TensorShape padTo4(TensorShape shape) {
        if (shape.rank() == RANK) {
            return shape;
        }
        if (shape.rank() > RANK) {
            throw new IllegalArgumentException("LMCache's remote metadata carries at most 4 dimensions, got " + shape);
        }
        int[] dims = new int[RANK];
        System.arraycopy(shape.toArray(), 0, dims, 0, shape.rank());
        return TensorShape.of(dims);
    }

    /**
     * The shape to allocate for the payload: the four dimensions with trailing zeros removed
     * (LMCache 2026's {@code _strip_shape_trailing_zeros}), so a byte object {@code [n, 0, 0, 0]}
     * gives {@code [n]} and a padded layerwise {@code [T, 2, D, 0]} gives {@code [T, 2, D]}. An
     * all-zero shape gives {@code [0]}.
     */
    public TensorShape toShape() {
        int[] dims = shape.toArray();
        int rank = RANK;
        while (rank > 1 && dims[rank - 1] == 0) {
            rank--;
        }
        if (rank == RANK) {
            return shape;
        }
        int[] kept = new int[rank];
        System.arraycopy(dims, 0, kept, 0, rank);
        return TensorShape.of(kept);
    }

    /** The dtype's header code: 0 for none, fp16 as 2. */
    public int dtypeCode() {
        return dtype.map(DType::metadataCode).orElse(DType.METADATA_CODE_NONE);
    }

    // ---- encoding ---------------------------------------------------------------------------

    /**
     * Writes the header at the start of {@code dst}.
     *
     * @throws IllegalArgumentException when {@code dst} is shorter than {@value #BYTES} bytes
     */
    public void encode(MemorySegment dst) {
        if (dst.byteSize() < BYTES) {
            throw new IllegalArgumentException("remote metadata needs " + BYTES + " bytes, the segment has " + dst.byteSize());
        }
        int[] v = values();
        for (int i = 0; i < v.length; i++) {
            dst.set(INT_LE, 4L * i, v[i]);
        }
    }

    /**
     * Writes the header at {@code dst}'s position and advances it by {@value #BYTES}; always
     * little-endian, whatever {@code dst}'s byte order.
     *
     * @throws java.nio.BufferOverflowException when fewer than {@value #BYTES} bytes remain
     */
    public void encode(ByteBuffer dst) {
        if (dst.remaining() < BYTES) {
            throw new BufferOverflowException();
        }
        encode(MemorySegment.ofBuffer(dst));
        dst.position(dst.position() + BYTES);
    }

    /** The header as a new {@value #BYTES}-byte array. */
    public byte[] toBytes() {
        byte[] bytes = new byte[BYTES];
        encode(MemorySegment.ofArray(bytes));
        return bytes;
    }

    private int[] values() {
        return new int[] {length, format.code(), dtypeCode(), shape.dim(0), shape.dim(1), shape.dim(2), shape.dim(3)};
    }

    // ---- decoding ---------------------------------------------------------------------------

    /**
     * Reads a header from the start of {@code src}.
     *
     * @throws IllegalArgumentException naming the field when the header is malformed: fewer than
     *                                  {@value #BYTES} bytes, a negative length or dimension, an
     *                                  unknown format or dtype code, a shape of 2^63 elements or more
     */
    public static RemoteMetadata decode(MemorySegment src) {
        if (src.byteSize() < BYTES) {
            throw malformed("it needs " + BYTES + " bytes, got " + src.byteSize());
        }
        int length = src.get(INT_LE, 0);
        int fmt = src.get(INT_LE, 4);
        int dtypeCode = src.get(INT_LE, 8);
        int[] dims = {src.get(INT_LE, 12), src.get(INT_LE, 16), src.get(INT_LE, 20), src.get(INT_LE, 24)};
        if (length < 0) {
            throw malformed("negative length " + length);
        }
        MemoryFormat format;
        try {
            format = MemoryFormat.fromCode(fmt);
        } catch (IllegalArgumentException e) {
            throw malformed("unknown memory format code " + fmt + " (valid: 0-7)");
        }
        // Checked here, not only by DType: codes outside 0..8 (negative ones included) are not LMCache's.
        if (dtypeCode < DType.METADATA_CODE_NONE || dtypeCode > MAX_DTYPE_CODE) {
            throw malformed("unknown dtype code " + dtypeCode + " (valid: 0-" + MAX_DTYPE_CODE + ")");
        }
        Optional<DType> dtype;
        try {
            dtype = DType.fromMetadataCode(dtypeCode);
        } catch (IllegalArgumentException e) {
            throw malformed("unknown dtype code " + dtypeCode + " (valid: 0-" + MAX_DTYPE_CODE + ")");
        }
        for (int i = 0; i < RANK; i++) {
            if (dims[i] < 0) {
                throw malformed("shape[" + i + "] is negative: " + Arrays.toString(dims));
            }
        }
        TensorShape shape;
        try {
            shape = TensorShape.of(dims);
        } catch (IllegalArgumentException e) {
            throw malformed("shape " + Arrays.toString(dims) + " is too large: " + e.getMessage());
        }
        return new RemoteMetadata(length, format, dtype, shape);
    }

    /** Reads a header at {@code src}'s position and advances it by {@value #BYTES}. */
    public static RemoteMetadata decode(ByteBuffer src) {
        if (src.remaining() < BYTES) {
            throw malformed("it needs " + BYTES + " bytes, " + src.remaining() + " remain in the buffer");
        }
        RemoteMetadata metadata = decode(MemorySegment.ofBuffer(src));
        src.position(src.position() + BYTES);
        return metadata;
    }

    /** Reads a header from the start of {@code src}. */
    public static RemoteMetadata decode(byte[] src) {
        return decode(MemorySegment.ofArray(src));
    }

    private static IllegalArgumentException malformed(String why) {
        return new IllegalArgumentException("malformed LMCache remote metadata header: " + why);
    }
}
