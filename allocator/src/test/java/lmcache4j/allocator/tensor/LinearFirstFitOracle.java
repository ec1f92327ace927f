package lmcache4j.allocator.tensor;

import lmcache4j.allocator.PlacementOracle;

/** {@link LinearFirstFitModel} as a {@link PlacementOracle} for allocator-level tests. */
public final class LinearFirstFitOracle implements PlacementOracle {
    private final LinearFirstFitModel model = new LinearFirstFitModel();

    /** A model of one free block {@code [0, capacity)}. */
    public LinearFirstFitOracle(long capacity) {
        model.free(0, capacity);
    }

    /** Appends a region at {@code base}, as {@link TensorMemoryAllocator#grow} does. */
    public void grow(long base, long size) {
        model.addBoundary(base);
        model.free(base, size);
    }

    @Override
    public long allocate(long physical) {
        return model.allocateFirstFit(physical);
    }

    @Override
    public boolean allocateBatch(long unit, int count, long[] out) {
        return model.allocateBatch(unit, count, out);
    }

    @Override
    public void free(long address, long physical) {
        model.free(address, physical);
    }
}
