package lmcache4j.engine.remote.redis;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.OptionalInt;

import org.junit.jupiter.api.Test;

import lmcache4j.allocator.DType;
import lmcache4j.allocator.MemoryFormat;
import lmcache4j.allocator.TensorShape;
import lmcache4j.engine.remote.RemoteMetadata;

/** {@link SplitManifest}: its bytes round-trip, and every truncation or flipped byte is refused. */
class SplitManifestTest {
    private static final TensorShape SHAPE = TensorShape.of(2, 7, 256, 512);
    private static final RemoteMetadata META = new RemoteMetadata((int) SHAPE.byteSize(DType.BFLOAT16), MemoryFormat.KV_2LTD,
            java.util.Optional.of(DType.BFLOAT16), SHAPE);
    private static final SplitManifest MANIFEST = new SplitManifest(META, 1 << 20, new int[] {1, -2, 0x7fffffff, 42});

    @Test
    void roundTripsAndSlicesThePayload() {
        byte[] bytes = MANIFEST.toBytes();
        assertEquals(SplitManifest.FIXED + RemoteMetadata.BYTES + 4 * 4 + 4, bytes.length);
        SplitManifest back = SplitManifest.decode(ByteBuffer.wrap(bytes));
        assertEquals(META, back.metadata());
        assertEquals(1 << 20, back.partBytes());
        assertArrayEquals(MANIFEST.partCrcs(), back.partCrcs());
        assertEquals(3L << 20, back.offsetOf(3));
        assertEquals(META.length() - (3 << 20), back.lengthOf(3));
        assertEquals(1 << 20, back.lengthOf(0));
    }

    @Test
    void everyTruncationIsRefusedAndThePartCountSurvivesAsLongAsTheHeaderDoes() {
        byte[] bytes = MANIFEST.toBytes();
        for (int n = 0; n < bytes.length; n++) {
            ByteBuffer cut = ByteBuffer.wrap(Arrays.copyOf(bytes, n));
            assertThrows(IllegalArgumentException.class, () -> SplitManifest.decode(cut), n + " bytes");
            assertEquals(n >= SplitManifest.FIXED ? OptionalInt.of(4) : OptionalInt.empty(), SplitManifest.partCountIn(cut));
        }
    }

    @Test
    void everyFlippedByteIsRefused() {
        byte[] bytes = MANIFEST.toBytes();
        for (int i = 0; i < bytes.length; i++) {
            byte[] bad = bytes.clone();
            bad[i] ^= 0x01;
            assertThrows(IllegalArgumentException.class, () -> SplitManifest.decode(ByteBuffer.wrap(bad)), "byte " + i);
        }
    }

    @Test
    void aPartCountThatDoesNotFitTheLengthIsRefused() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> new SplitManifest(META, 1 << 20, new int[3]));
        assertTrue(e.getMessage().contains("needs 4 part checksums, has 3"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> SplitManifest.decode(
                ByteBuffer.wrap("L4JS and more bytes".getBytes(java.nio.charset.StandardCharsets.US_ASCII))));
        assertTrue(e.getMessage().contains("not a split-layout manifest"), e.getMessage());
    }
}
