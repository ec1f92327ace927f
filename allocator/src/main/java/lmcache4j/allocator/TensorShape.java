package lmcache4j.allocator;

import java.util.Arrays;

/**
 * An immutable tensor shape. Chunk shapes are few per model, so callers keep one instance per
 * shape and reuse it: allocation takes no copy.
 */
public final class TensorShape {
    private final int[] dims;
    private final long numel;

    private TensorShape(int[] dims) {
        if (dims.length == 0) {
            throw new IllegalArgumentException("a tensor shape has at least one dimension");
        }
        long n = 1;
        for (int i = 0; i < dims.length; i++) {
            if (dims[i] < 0) {
                throw new IllegalArgumentException("dimension " + i + " of " + Arrays.toString(dims) + " is negative");
            }
            try {
                n = Math.multiplyExact(n, dims[i]);
            } catch (ArithmeticException e) {
                throw new IllegalArgumentException("shape " + Arrays.toString(dims) + " has more than 2^63 elements", e);
            }
        }
        this.dims = dims;
        this.numel = n;
    }

    /** A shape with these dimensions (copied). */
    public static TensorShape of(int... dims) {
        return new TensorShape(dims.clone());
    }

    /** The number of dimensions. */
    public int rank() {
        return dims.length;
    }

    /** Dimension {@code i}. */
    public int dim(int i) {
        if (i < 0 || i >= dims.length) {
            throw new IndexOutOfBoundsException("dimension " + i + " of rank-" + dims.length + " shape " + this);
        }
        return dims[i];
    }

    /** The product of the dimensions. */
    public long numel() {
        return numel;
    }

    /** Bytes of a dense tensor of this shape and {@code dtype}. */
    public long byteSize(DType dtype) {
        try {
            return Math.multiplyExact(numel, dtype.byteSize());
        } catch (ArithmeticException e) {
            throw new IllegalArgumentException("shape " + this + " of " + dtype + " exceeds 2^63 bytes", e);
        }
    }

    /** This shape with dimension {@code i} replaced by {@code value}, for example fewer tokens. */
    public TensorShape withDim(int i, int value) {
        int[] copy = dims.clone();
        dim(i);
        copy[i] = value;
        return new TensorShape(copy);
    }

    /** A copy of the dimensions. */
    public int[] toArray() {
        return dims.clone();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof TensorShape other && Arrays.equals(dims, other.dims);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(dims);
    }

    @Override
    public String toString() {
        return Arrays.toString(dims);
    }
}
