package lmcache4j.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;

import lmcache4j.cuda.internal.cudart.cudaIpcEventHandle_st;
import lmcache4j.cuda.internal.cudart.cudaIpcMemHandle_st;
import lmcache4j.cuda.internal.cudart.cudaPointerAttributes;
import lmcache4j.cuda.internal.libc.rlimit;
import org.junit.jupiter.api.Test;

/** The generated struct layouts have the sizes and offsets the C headers define (x86-64 / LP64). */
class StructLayoutTest {
    @Test
    void ipcHandlesAre64Bytes() {
        assertEquals(64, cudaIpcMemHandle_st.layout().byteSize());
        assertEquals(64, cudaIpcEventHandle_st.layout().byteSize());
    }

    @Test
    void pointerAttributesMatchDriverTypesH() {
        // enum type; int device; void *devicePointer; void *hostPointer; long reserved[8];
        assertEquals(0, cudaPointerAttributes.type$offset());
        assertEquals(4, cudaPointerAttributes.device$offset());
        assertEquals(8, cudaPointerAttributes.devicePointer$offset());
        assertEquals(16, cudaPointerAttributes.hostPointer$offset());
        assertEquals(24, cudaPointerAttributes.reserved$offset());
        assertEquals(88, cudaPointerAttributes.layout().byteSize());
    }

    @Test
    void rlimitIsTwoLongs() {
        assertEquals(16, rlimit.layout().byteSize());
    }
}
