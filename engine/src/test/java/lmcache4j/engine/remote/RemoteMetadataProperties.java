package lmcache4j.engine.remote;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.Optional;

import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

import lmcache4j.allocator.DType;
import lmcache4j.allocator.MemoryFormat;
import lmcache4j.allocator.TensorShape;

/** Encode/decode are inverse over every valid header, and the layout is the struct "iiiiiii" one. */
class RemoteMetadataProperties {

    @Provide
    Arbitrary<RemoteMetadata> metadata() {
        Arbitrary<Optional<DType>> dtypes = Arbitraries.of(Arrays.stream(DType.values()).filter(DType::hasMetadataCode)
                .toList()).map(Optional::of).injectNull(0.15).map(o -> o == null ? Optional.<DType>empty() : o);
        Arbitrary<int[]> dims = Arbitraries.integers().between(0, 1 << 15).array(int[].class).ofSize(4); // product < 2^63
        return Combinators.combine(Arbitraries.integers().between(0, Integer.MAX_VALUE), Arbitraries.of(MemoryFormat.class),
                dtypes, dims).as((len, fmt, dt, d) -> new RemoteMetadata(len, fmt, dt, TensorShape.of(d)));
    }

    @Property
    void decodeInvertsEncode(@ForAll("metadata") RemoteMetadata m) {
        assertEquals(m, RemoteMetadata.decode(m.toBytes()));
        ByteBuffer direct = ByteBuffer.allocateDirect(RemoteMetadata.BYTES);
        m.encode(direct);
        direct.flip();
        assertEquals(m, RemoteMetadata.decode(direct));
    }

    @Property
    void layoutIsSevenLittleEndianInts(@ForAll("metadata") RemoteMetadata m) {
        ByteBuffer b = ByteBuffer.wrap(m.toBytes()).order(ByteOrder.LITTLE_ENDIAN);
        assertEquals(m.length(), b.getInt(0));
        assertEquals(m.format().code(), b.getInt(4));
        assertEquals(m.dtype().map(DType::metadataCode).orElse(0), b.getInt(8));
        for (int i = 0; i < 4; i++) {
            assertEquals(m.shape().dim(i), b.getInt(12 + 4 * i));
        }
    }

    @Property
    void paddingAndStrippingAreInverseForShapesWithoutTrailingZeros(@ForAll("shapes") int[] dims) {
        TensorShape shape = TensorShape.of(dims);
        RemoteMetadata m = new RemoteMetadata(0, MemoryFormat.UNDEFINED, Optional.empty(), RemoteMetadata.padTo4(shape));
        assertEquals(shape, RemoteMetadata.decode(m.toBytes()).toShape());
    }

    @Provide
    Arbitrary<int[]> shapes() {
        return Arbitraries.integers().between(1, 1 << 15).array(int[].class).ofMinSize(1).ofMaxSize(4); // product < 2^63
    }
}
