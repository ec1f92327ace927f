package lmcache4j.jlama;

import java.util.Objects;

import com.github.tjake.jlama.safetensors.Config;

/**
 * Moves a cached key from the position it was computed at to another one: the CacheBlend step that
 * lets a document's KV serve wherever the document appears. A key after RoPE is the raw key turned,
 * pair by pair, by an angle proportional to its position, so turning it again by the difference of
 * the two angles gives the key the model would have computed at the new position, with no forward
 * pass.
 *
 * <p>The angles are Jlama's own: its rotary table ({@code Config.ropeFreqs}, the cosine and sine of
 * {@code position × frequency} for each pair, with the model's theta and linear scaling already in
 * the frequencies). Jlama pairs element {@code j} of a head with element {@code j + headSize/2} (the
 * Hugging Face "rotate half" layout), and for KV head {@code h} at position {@code p} it reads the
 * table at {@code p·headSize/2 + h·headSize + j}; this class reads the same entries at both
 * positions and turns by their difference in double precision, so the result differs from the key
 * computed at the new position by float rounding only (see {@code KeyRotationTest} for the bound).
 *
 * <p>Refused, with the reason: a model without a rotary table (learned absolute positions: nothing
 * to turn), an odd head size, and positions whose table entries lie past the table's end.
 */
final class KeyRotation {
    private final float[][] table;
    private final int headSize;
    private final int half;
    private final int kvHeads;
    /** The highest position whose every KV head's entries are inside the table. */
    private final int lastPosition;

    private KeyRotation(float[][] table, int headSize, int kvHeads) {
        this.table = table;
        this.headSize = headSize;
        this.half = headSize / 2;
        this.kvHeads = kvHeads;
        this.lastPosition = lastPosition(table.length, headSize, kvHeads);
    }

    /**
     * The highest position whose entries for every KV head lie inside a rotary table of
     * {@code entries} rows: Jlama reads row {@code p·headSize/2 + h·headSize + j} (j below half a
     * head) for KV head {@code h} at position {@code p}, so each KV head after the first takes two
     * positions off the table's end.
     */
    static int lastPosition(int entries, int headSize, int kvHeads) {
        int half = headSize / 2;
        return (entries - (kvHeads - 1) * headSize - half) / half;
    }

    /** The rotation of a Jlama model's keys; refuses a model whose keys carry no rotary position. */
    static KeyRotation of(Config config) {
        Objects.requireNonNull(config, "config");
        float[][] table = config.ropeFreqs.orElseThrow(() -> new IllegalArgumentException(
                "blending moves cached keys by their rotary (RoPE) angle; this model has no rotary table (its positions"
                        + " are learned embeddings added to the input), so a cached key cannot be moved: use prefix caching"));
        if (config.headSize % 2 != 0) {
            throw new IllegalArgumentException("RoPE pairs a head's elements; head size " + config.headSize + " is odd");
        }
        return new KeyRotation(table, config.headSize, config.numberOfKeyValueHeads);
    }

    /** The highest position a key can be moved from or to. */
    int lastPosition() {
        return lastPosition;
    }

    /**
     * Turns one position's key row ({@code kvHeads × headSize} floats from {@code offset}) in place
     * from position {@code from} to position {@code to}.
     */
    void move(float[] row, int offset, int from, int to) {
        check(from);
        check(to);
        if (from == to) {
            return;
        }
        for (int h = 0; h < kvHeads; h++) {
            int head = offset + h * headSize;
            for (int j = 0; j < half; j++) {
                float[] a = table[from * half + h * headSize + j];
                float[] b = table[to * half + h * headSize + j];
                // cos(b - a) and sin(b - a) from the two entries Jlama itself would use.
                double cos = (double) b[0] * a[0] + (double) b[1] * a[1];
                double sin = (double) b[1] * a[0] - (double) b[0] * a[1];
                double x0 = row[head + j];
                double x1 = row[head + j + half];
                row[head + j] = (float) (x0 * cos - x1 * sin);
                row[head + j + half] = (float) (x0 * sin + x1 * cos);
            }
        }
    }

    private void check(int position) {
        if (position < 0 || position > lastPosition) {
            throw new IllegalArgumentException("position " + position + " is outside this model's rotary table (positions 0 to "
                    + lastPosition + " for every KV head)");
        }
    }
}
