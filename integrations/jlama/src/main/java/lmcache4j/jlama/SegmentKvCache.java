package lmcache4j.jlama;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import com.github.tjake.jlama.tensor.AbstractTensor;

import lmcache4j.allocator.DType;
import lmcache4j.engine.connector.ExternalKvCache;

/**
 * A Jlama KV buffer as a blending engine sees it: a segment's keys are stored as if the segment had
 * been computed at positions {@code 0…n-1}, and loaded turned to the positions the segment has in
 * the prompt at hand. So a segment's KV serves at any position, and the same segment stored from two
 * prompts holds the same keys.
 *
 * <p>The engine gives each copy the segment's range in the current prompt; {@link #gather} turns the
 * copied keys from {@code start + t} to {@code t}, {@link #scatter} from {@code t} back to
 * {@code start + t} in Jlama's buffer (never in the stored chunk, which other requests read). Values
 * carry no position and are copied as they are.
 */
final class SegmentKvCache implements ExternalKvCache {
    private final JlamaKvCache kv;
    private final KeyRotation rotation;

    SegmentKvCache(JlamaKvCache kv, KeyRotation rotation) {
        this.kv = kv;
        this.rotation = rotation;
    }

    @Override
    public DType dtype() {
        return kv.dtype();
    }

    @Override
    public int layerCount() {
        return kv.layerCount();
    }

    @Override
    public int numKvHeads() {
        return kv.numKvHeads();
    }

    @Override
    public int headSize() {
        return kv.headSize();
    }

    @Override
    public int capacity() {
        return kv.capacity();
    }

    @Override
    public void gather(int start, int end, MemorySegment chunk) {
        kv.gather(start, end, chunk);
        int tokens = end - start;
        int hidden = hidden();
        long elementBytes = dtype().byteSize();
        float[] row = new float[hidden];
        // The chunk is [K, V][layer][token][hidden]: the keys are its first half.
        for (int layer = 0; layer < layerCount(); layer++) {
            for (int t = 0; t < tokens; t++) {
                long base = ((long) layer * tokens + t) * hidden * elementBytes;
                read(chunk, base, row);
                rotation.move(row, 0, start + t, t);
                write(row, chunk, base);
            }
        }
    }

    @Override
    public void scatter(MemorySegment chunk, int start, int end) {
        kv.scatter(chunk, start, end);
        int hidden = hidden();
        float[] row = new float[hidden];
        for (int layer = 0; layer < layerCount(); layer++) {
            for (int p = start; p < end; p++) {
                AbstractTensor key = kv.buffer().getKeyTensorForPosition(layer, p);
                for (int e = 0; e < hidden; e++) {
                    row[e] = key.get(0, e);
                }
                rotation.move(row, 0, p - start, p);
                for (int e = 0; e < hidden; e++) {
                    key.set(row[e], 0, e);
                }
            }
        }
    }

    private void read(MemorySegment chunk, long base, float[] row) {
        if (dtype() == DType.FLOAT32) {
            MemorySegment.copy(chunk, ValueLayout.JAVA_FLOAT_UNALIGNED, base, row, 0, row.length);
        } else {
            for (int e = 0; e < row.length; e++) {
                short bits = chunk.get(ValueLayout.JAVA_SHORT_UNALIGNED, base + 2L * e);
                row[e] = Float.intBitsToFloat((bits & 0xFFFF) << 16);
            }
        }
    }

    private void write(float[] row, MemorySegment chunk, long base) {
        if (dtype() == DType.FLOAT32) {
            MemorySegment.copy(row, 0, chunk, ValueLayout.JAVA_FLOAT_UNALIGNED, base, row.length);
        } else {
            for (int e = 0; e < row.length; e++) {
                chunk.set(ValueLayout.JAVA_SHORT_UNALIGNED, base + 2L * e, toBfloat16(row[e]));
            }
        }
    }

    /** Round to nearest, ties to even (NaN kept a NaN). */
    private static short toBfloat16(float f) {
        int bits = Float.floatToRawIntBits(f);
        if (Float.isNaN(f)) {
            return (short) ((bits >>> 16) | 0x40);
        }
        int rounded = bits + 0x7FFF + ((bits >>> 16) & 1);
        return (short) (rounded >>> 16);
    }
}
