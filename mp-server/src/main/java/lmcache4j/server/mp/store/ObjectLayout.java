package lmcache4j.server.mp.store;

import java.util.Objects;

import lmcache4j.allocator.DType;
import lmcache4j.allocator.TensorShape;

/**
 * The shape and element type of every object of one registered KV layout (one per model and world
 * size): {@code [2, layers, chunkTokens, hidden]}, or {@code [layers, chunkTokens, hidden]} for
 * MLA. Workers view a slot as this tensor, so the store reports it with each slot.
 *
 * @param shape the tensor shape
 * @param dtype the element type
 */
public record ObjectLayout(TensorShape shape, DType dtype) {
    /** Checks that the tensor is not empty. */
    public ObjectLayout {
        Objects.requireNonNull(shape, "shape");
        Objects.requireNonNull(dtype, "dtype");
        if (shape.numel() <= 0) {
            throw new IllegalArgumentException("an object layout needs a non-empty shape, got " + shape);
        }
    }

    /** K and V stacked first: {@code [2, layers, chunkTokens, hidden]}. */
    public static ObjectLayout kv(int layers, int chunkTokens, int hidden, DType dtype) {
        return new ObjectLayout(TensorShape.of(2, layers, chunkTokens, hidden), dtype);
    }

    /** MLA's single latent: {@code [layers, chunkTokens, hidden]}. */
    public static ObjectLayout mla(int layers, int chunkTokens, int hidden, DType dtype) {
        return new ObjectLayout(TensorShape.of(layers, chunkTokens, hidden), dtype);
    }

    /** The object's bytes: elements × element size (the slot length workers see). */
    public long byteLength() {
        return shape.byteSize(dtype);
    }
}
