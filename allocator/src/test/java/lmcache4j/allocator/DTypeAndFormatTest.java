package lmcache4j.allocator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Optional;

import org.junit.jupiter.api.Test;

class DTypeAndFormatTest {
    @Test
    void dtypesCarryLmcachesNamesCodesAndSizes() {
        assertEquals("half", DType.FLOAT16.keyName());
        assertEquals(2, DType.FLOAT16.metadataCode(), "fp16 is always written as 2");
        assertEquals(Optional.of(DType.FLOAT16), DType.fromMetadataCode(1), "code 1 (torch.half) decodes to fp16");
        assertEquals(Optional.empty(), DType.fromMetadataCode(0));
        assertEquals(DType.BFLOAT16, DType.fromMetadataCode(3).orElseThrow());
        assertEquals(DType.FLOAT8_E5M2, DType.fromMetadataCode(8).orElseThrow());
        assertEquals(DType.FLOAT32, DType.fromKeyName("float"));
        assertEquals(DType.FLOAT16, DType.fromTorchName("torch.half"));
        assertEquals(DType.BFLOAT16, DType.fromTorchName("torch.bfloat16"));
        assertEquals(2, DType.BFLOAT16.byteSize());
        assertEquals(1, DType.FLOAT8_E4M3FN.byteSize());
        for (int code = 1; code <= 8; code++) {
            assertTrue(DType.fromMetadataCode(code).isPresent());
        }
    }

    @Test
    void unknownDtypesAreRejectedWithTheValidOnes() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> DType.fromKeyName("fp4"));
        assertTrue(e.getMessage().contains("'fp4'") && e.getMessage().contains("bfloat16"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> DType.fromMetadataCode(9));
        assertThrows(IllegalArgumentException.class, () -> DType.fromMetadataCode(-1), "-1 marks types without a code");
        assertThrows(IllegalStateException.class, DType.INT32::metadataCode);
    }

    @Test
    void formatsHaveLmcachesCodesAndTheCorrectTokenDimension() {
        for (MemoryFormat f : MemoryFormat.values()) {
            assertEquals(f, MemoryFormat.fromCode(f.code()));
        }
        assertEquals(1, MemoryFormat.KV_2LTD.code());
        assertEquals(6, MemoryFormat.KV_MLA_FMT.code());
        assertEquals(300, MemoryFormat.KV_2LTD.tokenCount(TensorShape.of(2, 32, 300, 1024)));
        assertEquals(300, MemoryFormat.KV_T2D.tokenCount(TensorShape.of(300, 2, 1024)), "[T, 2, D]: tokens in dim 0");
        assertEquals(300, MemoryFormat.KV_2TD.tokenCount(TensorShape.of(2, 300, 1024)), "[2, T, D]: tokens in dim 1");
        assertEquals(1, MemoryFormat.KV_T2D.lmcacheTokenDim(), "LMCache's quirk is kept for exact counters");
        assertEquals(300, MemoryFormat.KV_MLA_FMT.tokenCount(TensorShape.of(1, 61, 300, 576)));
        assertThrows(IllegalArgumentException.class, () -> MemoryFormat.fromCode(42));
    }

    @Test
    void shapesThatDoNotFitTheirFormatAreRejected() {
        assertThrows(IllegalArgumentException.class, () -> MemoryFormat.KV_2LTD.validate(TensorShape.of(2, 256, 1024)));
        assertThrows(IllegalArgumentException.class, () -> MemoryFormat.KV_2LTD.validate(TensorShape.of(3, 2, 256, 1024)));
        assertThrows(IllegalArgumentException.class, () -> MemoryFormat.KV_T2D.validate(TensorShape.of(256, 3, 1024)));
        assertThrows(IllegalArgumentException.class, () -> MemoryFormat.KV_MLA_FMT.validate(TensorShape.of(2, 4, 256, 576)));
        MemoryFormat.KV_2TD.validate(TensorShape.of(2, 256, 1024));
        assertThrows(IllegalArgumentException.class, () -> TensorShape.of(-1, 2));
        assertThrows(IllegalArgumentException.class, () -> TensorShape.of(Integer.MAX_VALUE, Integer.MAX_VALUE, Integer.MAX_VALUE));
        assertThrows(IllegalArgumentException.class, TensorShape::of);
    }
}
