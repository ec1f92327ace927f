package lmcache4j.jlama;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.locks.Lock;
import java.util.stream.IntStream;

import com.github.tjake.jlama.model.AbstractModel;
import com.github.tjake.jlama.tensor.AbstractTensor;
import com.github.tjake.jlama.tensor.KvBufferCache;

/**
 * CacheBlend's forward pass over a KV buffer that already holds the cached segments' KV, moved to
 * their positions in this prompt. Every position goes through layers {@code 0…check}; at the check
 * layer each cached position's fresh key is compared with its cached key, and {@code ratio} of the
 * cached positions, those whose keys moved most (squared L2 distance, as LMCache's {@code topk}
 * blend), are selected together with every position that was not cached (the question, the
 * separators, the last token). Layers after the check layer run on the selected positions only,
 * in runs of contiguous positions; each run writes its fresh K and V over the cached ones and
 * attends over the whole mixed KV of the buffer.
 *
 * <p>Runs never cross a multiple of {@link CachedPrefill#JLAMA_BATCH}, and before the selection
 * the layers run over the batches Jlama's {@code batchForward} uses: with everything selected,
 * every layer sees the inputs, KV and batch boundaries of a plain prefill, so the output is the
 * plain prefill's bit for bit.
 */
final class BlendedForward {
    /** What the pass did: the last position's final hidden state (the caller closes it), and its cost. */
    record Outcome(AbstractTensor lastHidden, int recomputedTokens, long tokenLayers) {
    }

    private final AbstractModel model;
    private final JlamaLayers layers;
    private final Lock lock;
    private final int batch;

    BlendedForward(AbstractModel model, JlamaLayers layers, Lock lock, int batch) {
        this.model = model;
        this.layers = layers;
        this.lock = lock;
        this.batch = batch;
    }

    /**
     * @param cached which positions' KV came from the cache (the last position must not have)
     * @param ratio  the share of cached positions recomputed after the check layer
     * @param check  the check layer
     */
    Outcome run(int[] tokens, boolean[] cached, KvBufferCache.KvBuffer buffer, double ratio, int check) {
        int n = tokens.length;
        int depth = layers.count();
        int kvLength = model.getConfig().kvLength;
        int[] cachedPositions = IntStream.range(0, n).filter(p -> cached[p]).toArray();
        float[][] cachedKeys = new float[cachedPositions.length][];
        for (int i = 0; i < cachedPositions.length; i++) {
            cachedKeys[i] = keyRow(buffer, check, cachedPositions[i], kvLength);
        }
        List<Run> batches = new ArrayList<>();
        for (int at = 0; at < n; at += batch) {
            int end = Math.min(n, at + batch);
            batches.add(new Run(at, end, layers.embed(Arrays.copyOfRange(tokens, at, end), at)));
        }
        try {
            for (int layer = 0; layer <= check; layer++) {
                forward(layer, batches, buffer);
            }
            boolean[] selected = select(cached, cachedPositions, cachedKeys, buffer, ratio, check, kvLength);
            int recomputed = 0;
            for (boolean s : selected) {
                recomputed += s ? 1 : 0;
            }
            long tokenLayers = (long) n * (check + 1) + (long) recomputed * (depth - check - 1);
            if (check == depth - 1) {
                return new Outcome(lastRow(batches.getLast()), recomputed, tokenLayers);
            }
            List<Run> runs = runs(selected, batches);
            try {
                for (int layer = check + 1; layer < depth; layer++) {
                    forward(layer, runs, buffer);
                }
                return new Outcome(lastRow(runs.getLast()), recomputed, tokenLayers);
            } finally {
                runs.forEach(Run::close);
            }
        } finally {
            batches.forEach(Run::close);
        }
    }

    /** One layer over each run in order, each run's output replacing its input. */
    private void forward(int layer, List<Run> runs, KvBufferCache.KvBuffer buffer) {
        for (Run run : runs) {
            lock.lock();
            try {
                AbstractTensor out = layers.forward(layer, run.hidden, run.start, buffer);
                run.hidden.close();
                run.hidden = out;
            } finally {
                lock.unlock();
            }
        }
    }

    /** Every position not cached, and the {@code ratio} of cached ones whose check-layer keys moved most. */
    private static boolean[] select(boolean[] cached, int[] cachedPositions, float[][] cachedKeys,
                                    KvBufferCache.KvBuffer buffer, double ratio, int check, int kvLength) {
        boolean[] selected = new boolean[cached.length];
        for (int p = 0; p < cached.length; p++) {
            selected[p] = !cached[p];
        }
        int take = (int) (cachedPositions.length * ratio);
        if (take == 0) {
            return selected;
        }
        double[] deviation = new double[cachedPositions.length];
        for (int i = 0; i < cachedPositions.length; i++) {
            float[] fresh = keyRow(buffer, check, cachedPositions[i], kvLength);
            double sum = 0;
            for (int e = 0; e < kvLength; e++) {
                double d = (double) fresh[e] - cachedKeys[i][e];
                sum += d * d;
            }
            deviation[i] = sum;
        }
        Integer[] order = new Integer[cachedPositions.length];
        Arrays.setAll(order, i -> i);
        Arrays.sort(order, Comparator.comparingDouble((Integer i) -> -deviation[i]).thenComparingInt(i -> i));
        for (int k = 0; k < take; k++) {
            selected[cachedPositions[order[k]]] = true;
        }
        return selected;
    }

    /** The selected positions as runs of contiguous positions, none crossing a batch boundary. */
    private List<Run> runs(boolean[] selected, List<Run> batches) {
        int dim = model.getConfig().embeddingLength;
        List<Run> runs = new ArrayList<>();
        try {
            for (Run b : batches) {
                int p = b.start;
                while (p < b.end) {
                    if (!selected[p]) {
                        p++;
                        continue;
                    }
                    int start = p;
                    while (p < b.end && selected[p]) {
                        p++;
                    }
                    AbstractTensor rows = model.makeDenseTensor(p - start, dim);
                    rows.copyFrom(b.hidden, (start - b.start) * dim, 0, (p - start) * dim);
                    runs.add(new Run(start, p, rows));
                }
            }
        } catch (RuntimeException | Error e) {
            runs.forEach(Run::close);
            throw e;
        }
        return runs;
    }

    private AbstractTensor lastRow(Run run) {
        int dim = model.getConfig().embeddingLength;
        AbstractTensor row = model.makeDenseTensor(1, dim);
        row.copyFrom(run.hidden, (run.end - run.start - 1) * dim, 0, dim);
        return row;
    }

    private static float[] keyRow(KvBufferCache.KvBuffer buffer, int layer, int position, int kvLength) {
        AbstractTensor key = buffer.getKeyTensorForPosition(layer, position);
        float[] row = new float[kvLength];
        for (int e = 0; e < kvLength; e++) {
            row[e] = key.get(0, e);
        }
        return row;
    }

    /** Positions {@code [start, end)} and their hidden states, one row each. */
    private static final class Run implements AutoCloseable {
        final int start;
        final int end;
        AbstractTensor hidden;

        Run(int start, int end, AbstractTensor hidden) {
            this.start = start;
            this.end = end;
            this.hidden = hidden;
        }

        @Override
        public void close() {
            hidden.close();
        }
    }
}
