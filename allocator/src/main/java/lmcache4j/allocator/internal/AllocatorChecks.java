package lmcache4j.allocator.internal;

import java.util.Collection;
import java.util.Objects;

import lmcache4j.allocator.DType;
import lmcache4j.allocator.MemoryFormat;
import lmcache4j.allocator.MemoryObj;
import lmcache4j.allocator.MemoryObjMisuseException;
import lmcache4j.allocator.TensorShape;

/** The argument checks every allocator makes, in one place so that they fail alike. */
public final class AllocatorChecks {
    private AllocatorChecks() {
    }

    /**
     * The bytes of a tensor of {@code shape × dtype} in {@code format}, after checking that the shape
     * fits the format and is not empty.
     */
    public static long tensorBytes(TensorShape shape, DType dtype, MemoryFormat format) {
        Objects.requireNonNull(shape, "shape");
        Objects.requireNonNull(dtype, "dtype");
        Objects.requireNonNull(format, "format");
        format.validate(shape);
        long raw = shape.byteSize(dtype);
        if (raw == 0) {
            throw new IllegalArgumentException("cannot allocate an empty tensor: shape " + shape);
        }
        return raw;
    }

    /**
     * Checks, before any is released, that every object belongs to {@code owner} and is still live:
     * a batched release either releases all or none.
     */
    public static void requireOwnedAndLive(Collection<MemoryObj> objects, MemoryOwner owner) {
        for (MemoryObj obj : objects) {
            if (!obj.isOwnedBy(owner)) {
                throw new MemoryObjMisuseException("releaseAll on '" + owner.name() + "' refused: " + obj
                        + " belongs to allocator '" + obj.ownerName() + "'");
            }
            if (!obj.isValid()) {
                throw new MemoryObjMisuseException("releaseAll on '" + owner.name() + "' refused: " + obj
                        + " was already released (use after release)");
            }
        }
    }
}
