package lmcache4j.cli;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import lmcache4j.bench.demo.ServingSimulator;
import lmcache4j.engine.connector.PagedKvCache;

/**
 * Flips one bit in each of {@code bytes} different bytes of the first retrieve that loaded anything
 * (token 0 of layer 0's K plane, then spread over the other layers, planes and tokens), and nothing
 * after that: what a broken engine returning almost-right KV looks like.
 *
 * <p>Not nested in a test class: surefire lists test classes by reflection on a class path without
 * the engine's module when each class runs in a JVM of its own (tests/isolated-runs.sh), so engine
 * types must stay out of test classes' member signatures.
 */
final class FlipRetrievedBytes implements ServingSimulator.AfterRetrieve {
    private final int bytes;
    private int flipped;

    FlipRetrievedBytes(int bytes) {
        this.bytes = bytes;
    }

    int flipped() {
        return flipped;
    }

    @Override
    public void retrieved(PagedKvCache kv, long[] slots, int retrievedTokens) {
        if (flipped > 0 || retrievedTokens == 0) {
            return;
        }
        for (int i = 0; i < bytes; i++) {
            int token = (int) ((long) i * (retrievedTokens - 1) / Math.max(1, bytes - 1));
            MemorySegment layer = kv.layers().get(i % kv.layerCount());
            long at = kv.offset(i % 2, slots[token]) + (i * 37L) % kv.vectorBytes();
            layer.set(ValueLayout.JAVA_BYTE, at, (byte) (layer.get(ValueLayout.JAVA_BYTE, at) ^ 0x10));
            flipped++;
        }
    }
}
