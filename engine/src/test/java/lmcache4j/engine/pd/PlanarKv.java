package lmcache4j.engine.pd;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Random;

import lmcache4j.allocator.DType;
import lmcache4j.engine.ModelMetadata;
import lmcache4j.engine.connector.ExternalKvCache;

/** A model's KV for the PD tests: {@code [2][layers][positions × hidden]} floats in one segment, random (or zeros, seed 0). */
public final class PlanarKv implements ExternalKvCache {
    /** Every byte, to compare a sender's KV with what a decoder retrieved. */
    public final MemorySegment all;
    private final ModelMetadata model;
    private final int positions;
    private final long row;

    public PlanarKv(Arena arena, ModelMetadata model, int positions, long seed) {
        this.model = model;
        this.positions = positions;
        this.row = (long) model.numKvHeads() * model.headSize() * Float.BYTES;
        this.all = arena.allocate(2L * model.numLayers() * positions * row, 64);
        Random r = new Random(seed);
        for (long i = 0; seed != 0 && i < all.byteSize() / Float.BYTES; i++) {
            all.setAtIndex(ValueLayout.JAVA_FLOAT, i, r.nextFloat());
        }
    }

    @Override public DType dtype() { return DType.FLOAT32; }
    @Override public int layerCount() { return model.numLayers(); }
    @Override public int numKvHeads() { return model.numKvHeads(); }
    @Override public int headSize() { return model.headSize(); }
    @Override public int capacity() { return positions; }

    @Override
    public void gather(int start, int end, MemorySegment chunk) {
        copy(start, end, chunk, true);
    }

    @Override
    public void scatter(MemorySegment chunk, int start, int end) {
        copy(start, end, chunk, false);
    }

    /** The first {@code positions} of every plane, one after the other. */
    public byte[] bytes(int positions) {
        java.nio.ByteBuffer out = java.nio.ByteBuffer.allocate((int) (2 * model.numLayers() * positions * row));
        for (int plane = 0; plane < 2 * model.numLayers(); plane++) {
            out.put(all.asSlice(plane * (long) this.positions * row, positions * row).toArray(ValueLayout.JAVA_BYTE));
        }
        return out.array();
    }

    private void copy(int start, int end, MemorySegment chunk, boolean out) {
        int tokens = end - start;
        for (int plane = 0; plane < 2 * model.numLayers(); plane++) {
            long at = (plane * (long) positions + start) * row;
            if (out) {
                MemorySegment.copy(all, at, chunk, plane * tokens * row, tokens * row);
            } else {
                MemorySegment.copy(chunk, plane * tokens * row, all, at, tokens * row);
            }
        }
    }
}
