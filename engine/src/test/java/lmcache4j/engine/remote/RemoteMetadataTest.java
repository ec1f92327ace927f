package lmcache4j.engine.remote;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.HexFormat;
import java.util.Optional;

import org.junit.jupiter.api.Test;

import lmcache4j.allocator.DType;
import lmcache4j.allocator.MemoryFormat;
import lmcache4j.allocator.MemoryObj;
import lmcache4j.allocator.TensorShape;
import lmcache4j.allocator.tensor.TensorMemoryAllocator;

/**
 * Golden vectors for LMCache's 28-byte header. LMCache ({@code lmcache/v1/protocol.py},
 * {@code RemoteMetadata.serialize}) packs {@code struct.pack("iiiiiii", length, fmt.value,
 * DTYPE_TO_INT[dtype], shape[0], shape[1], shape[2], shape[3])}: native mode, so on x86-64 and
 * aarch64 seven little-endian int32 with no padding. The hex strings below were derived by hand
 * from that format and cross-checked with CPython's {@code struct.pack} (stdlib only; LMCache
 * itself is not installed here).
 */
class RemoteMetadataTest {
    private static final HexFormat HEX = HexFormat.of();

    /** struct.pack("iiiiiii", 65536, 1, 3, 2, 2, 256, 32): a KV_2LTD bf16 chunk [2, 2, 256, 32]. */
    static final String KV_2LTD_BF16 = "00000100" + "01000000" + "03000000" + "02000000" + "02000000" + "00010000" + "20000000";
    /** struct.pack("iiiiiii", 3072, 3, 2, 2, 8, 96, 0): a KV_2TD fp16 layer [2, 8, 96] padded to 4 dims (LMCache 2026). */
    static final String KV_2TD_FP16 = "000c0000" + "03000000" + "02000000" + "02000000" + "08000000" + "60000000" + "00000000";
    /** struct.pack("iiiiiii", 5, 5, 0, 5, 0, 0, 0): a 5-byte BINARY_BUFFER, dtype None, shape [5, 0, 0, 0]. */
    static final String BYTES_5 = "05000000" + "05000000" + "00000000" + "05000000" + "00000000" + "00000000" + "00000000";
    /** struct.pack("iiiiiii", 1024, 1, 1, 2, 1, 16, 16): dtype code 1 (torch.half in INT_TO_DTYPE). */
    static final String HALF_CODE_1 = "00040000" + "01000000" + "01000000" + "02000000" + "01000000" + "10000000" + "10000000";

    @Test
    void encodesTheGoldenBytes() {
        assertEquals(KV_2LTD_BF16, HEX.formatHex(new RemoteMetadata(65536, MemoryFormat.KV_2LTD, Optional.of(DType.BFLOAT16),
                TensorShape.of(2, 2, 256, 32)).toBytes()));
        assertEquals(KV_2TD_FP16, HEX.formatHex(new RemoteMetadata(3072, MemoryFormat.KV_2TD, Optional.of(DType.FLOAT16),
                TensorShape.of(2, 8, 96, 0)).toBytes()));
        assertEquals(BYTES_5, HEX.formatHex(new RemoteMetadata(5, MemoryFormat.BINARY_BUFFER, Optional.empty(),
                TensorShape.of(5, 0, 0, 0)).toBytes()));
    }

    @Test
    void decodesTheGoldenBytes() {
        RemoteMetadata m = RemoteMetadata.decode(HEX.parseHex(KV_2LTD_BF16));
        assertEquals(new RemoteMetadata(65536, MemoryFormat.KV_2LTD, Optional.of(DType.BFLOAT16), TensorShape.of(2, 2, 256, 32)), m);
        assertEquals(TensorShape.of(2, 2, 256, 32), m.toShape());

        RemoteMetadata layer = RemoteMetadata.decode(HEX.parseHex(KV_2TD_FP16));
        assertEquals(Optional.of(DType.FLOAT16), layer.dtype());
        assertEquals(TensorShape.of(2, 8, 96), layer.toShape(), "trailing zero padding stripped, as LMCache 2026 does");

        RemoteMetadata bytes = RemoteMetadata.decode(HEX.parseHex(BYTES_5));
        assertEquals(Optional.empty(), bytes.dtype());
        assertEquals(MemoryFormat.BINARY_BUFFER, bytes.format());
        assertEquals(TensorShape.of(5), bytes.toShape());
    }

    @Test
    void fp16IsWrittenAsTwoAndOneReadsAsFp16() {
        RemoteMetadata half = RemoteMetadata.decode(HEX.parseHex(HALF_CODE_1));
        assertEquals(Optional.of(DType.FLOAT16), half.dtype());
        byte[] again = half.toBytes();
        assertEquals(2, ByteBuffer.wrap(again).order(ByteOrder.LITTLE_ENDIAN).getInt(8), "fp16 is always written as 2");
        assertEquals(HALF_CODE_1.substring(0, 16) + "02000000" + HALF_CODE_1.substring(24), HEX.formatHex(again));
    }

    @Test
    void byteBufferEncodingIsLittleEndianAtThePositionWhateverTheBufferOrder() {
        RemoteMetadata m = RemoteMetadata.decode(HEX.parseHex(KV_2LTD_BF16));
        ByteBuffer buf = ByteBuffer.allocate(40).order(ByteOrder.BIG_ENDIAN);
        buf.position(5);
        m.encode(buf);
        assertEquals(5 + RemoteMetadata.BYTES, buf.position());
        byte[] written = new byte[RemoteMetadata.BYTES];
        buf.get(5, written);
        assertEquals(KV_2LTD_BF16, HEX.formatHex(written));
        buf.position(5);
        assertEquals(m, RemoteMetadata.decode(buf));
        assertEquals(5 + RemoteMetadata.BYTES, buf.position());
        assertThrows(java.nio.BufferOverflowException.class, () -> m.encode(ByteBuffer.allocate(27)));
    }

    @Test
    void segmentEncodingWritesOnlyTheHeader() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment seg = arena.allocate(32);
            seg.fill((byte) 0x7f);
            RemoteMetadata.decode(HEX.parseHex(BYTES_5)).encode(seg);
            assertEquals(BYTES_5, HEX.formatHex(seg.asSlice(0, 28).toArray(java.lang.foreign.ValueLayout.JAVA_BYTE)));
            assertEquals((byte) 0x7f, seg.get(java.lang.foreign.ValueLayout.JAVA_BYTE, 28));
            assertThrows(IllegalArgumentException.class, () -> RemoteMetadata.decode(HEX.parseHex(BYTES_5)).encode(seg.asSlice(0, 27)));
        }
    }

    @Test
    void malformedHeadersAreRefusedNamingTheField() {
        assertMalformed(KV_2LTD_BF16.substring(0, 54), "needs 28 bytes");
        assertMalformed("ffffffff" + KV_2LTD_BF16.substring(8), "negative length -1");
        assertMalformed(KV_2LTD_BF16.substring(0, 8) + "08000000" + KV_2LTD_BF16.substring(16), "unknown memory format code 8");
        assertMalformed(KV_2LTD_BF16.substring(0, 16) + "09000000" + KV_2LTD_BF16.substring(24), "unknown dtype code 9");
        assertMalformed(KV_2LTD_BF16.substring(0, 16) + "ffffffff" + KV_2LTD_BF16.substring(24), "unknown dtype code -1");
        assertMalformed(KV_2LTD_BF16.substring(0, 16) + "fdffffff" + KV_2LTD_BF16.substring(24), "unknown dtype code -3");
        assertMalformed(KV_2LTD_BF16.substring(0, 48) + "feffffff", "shape[3] is negative");
        assertMalformed(KV_2LTD_BF16.substring(0, 24) + "ffffff7f".repeat(4), "is too large");
    }

    private static void assertMalformed(String hex, String expected) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> RemoteMetadata.decode(HEX.parseHex(hex)));
        assertTrue(e.getMessage().contains("malformed LMCache remote metadata header"), e.getMessage());
        assertTrue(e.getMessage().contains(expected), e.getMessage());
    }

    @Test
    void invalidMetadataCannotBeBuilt() {
        IllegalArgumentException rank = assertThrows(IllegalArgumentException.class,
                () -> new RemoteMetadata(8, MemoryFormat.KV_2TD, Optional.of(DType.FLOAT16), TensorShape.of(2, 1, 2)));
        assertTrue(rank.getMessage().contains("exactly 4 dimensions"), rank.getMessage());
        assertThrows(IllegalArgumentException.class,
                () -> new RemoteMetadata(8, MemoryFormat.KV_2LTD, Optional.of(DType.FLOAT16), TensorShape.of(1, 1, 1, 1, 1)));
        assertThrows(IllegalArgumentException.class,
                () -> new RemoteMetadata(-1, MemoryFormat.KV_2LTD, Optional.of(DType.FLOAT16), TensorShape.of(1, 1, 1, 1)));
        IllegalArgumentException noCode = assertThrows(IllegalArgumentException.class,
                () -> new RemoteMetadata(8, MemoryFormat.KV_2LTD, Optional.of(DType.INT8), TensorShape.of(2, 1, 4, 1)));
        assertTrue(noCode.getMessage().contains("no dtype code for int8"), noCode.getMessage());
    }

    @Test
    void forObjectUsesTheLogicalSizeAndPadsTheShape() {
        try (TensorMemoryAllocator alloc = TensorMemoryAllocator.strict("meta-test", 1 << 20, 4096)) {
            MemoryObj chunk = alloc.allocate(TensorShape.of(2, 2, 256, 32), DType.BFLOAT16, MemoryFormat.KV_2LTD).orElseThrow();
            assertEquals(KV_2LTD_BF16, HEX.formatHex(RemoteMetadata.forObject(chunk).toBytes()));
            MemoryObj layer = alloc.allocate(TensorShape.of(2, 8, 96), DType.FLOAT16, MemoryFormat.KV_2TD).orElseThrow();
            assertEquals(KV_2TD_FP16, HEX.formatHex(RemoteMetadata.forObject(layer).toBytes()));
            assertEquals(layer.shape(), RemoteMetadata.forObject(layer).toShape());
            MemoryObj odd = alloc.allocate(TensorShape.of(2, 1, 3, 5), DType.FLOAT32, MemoryFormat.KV_2LTD).orElseThrow();
            assertEquals(120, RemoteMetadata.forObject(odd).length(), "logical bytes, not the 4096-aligned slot");
            MemoryObj buffer = alloc.allocate(TensorShape.of(5), DType.UINT8, MemoryFormat.BINARY_BUFFER).orElseThrow();
            assertEquals(BYTES_5, HEX.formatHex(RemoteMetadata.forObject(buffer).toBytes()), "byte buffers carry dtype none");
            MemoryObj int8 = alloc.allocate(TensorShape.of(2, 1, 4, 1), DType.INT8, MemoryFormat.KV_2LTD).orElseThrow();
            assertThrows(IllegalArgumentException.class, () -> RemoteMetadata.forObject(int8));
            for (MemoryObj o : new MemoryObj[] {chunk, layer, odd, buffer, int8}) {
                o.release();
            }
        }
    }

    @Test
    void toShapeKeepsAtLeastOneDimension() {
        assertEquals(TensorShape.of(0), new RemoteMetadata(0, MemoryFormat.UNDEFINED, Optional.empty(), TensorShape.of(0, 0, 0, 0)).toShape());
        assertArrayEquals(new int[] {3, 0, 2}, new RemoteMetadata(0, MemoryFormat.UNDEFINED, Optional.empty(),
                TensorShape.of(3, 0, 2, 0)).toShape().toArray());
    }
}
