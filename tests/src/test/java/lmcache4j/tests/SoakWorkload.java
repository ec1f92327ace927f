package lmcache4j.tests;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;

/**
 * The soak's requests, from one seed: prompts that share prefixes as a serving engine's do (a few
 * system prompts, conversations that grow turn by turn, branches from an earlier turn, the same
 * prompt asked again), and the operation to run on each.
 */
final class SoakWorkload {
    /** What a request does with the engine. */
    enum Op {
        /** lookup (pins) → retrieve (unpins) → verify → compute the rest → store: a served request. */
        SERVE,
        /** store without a lookup first: a prefill whose KV is offered to the cache. */
        STORE_ONLY,
        /** retrieve without a lookup (no pins) → verify. */
        RETRIEVE_WITHOUT_LOOKUP,
        /** lookup with pins, then the request is cancelled: the pins are released without a retrieve. */
        ABANDONED_LOOKUP,
        /** lookup without pins. */
        LOOKUP_ONLY
    }

    private static final int VOCABULARY = 50_000;
    private static final int HISTORY = 256;

    private final SplittableRandom random;
    private final int maxTokens;
    private final List<int[]> systemPrompts = new ArrayList<>();
    private final List<int[]> history = new ArrayList<>();

    SoakWorkload(long seed, int maxTokens) {
        this.random = new SplittableRandom(seed);
        this.maxTokens = maxTokens;
        for (int i = 0; i < 6; i++) {
            systemPrompts.add(tokens(random.nextInt(64, 320)));
        }
    }

    SplittableRandom random() {
        return random;
    }

    Op nextOp() {
        int r = random.nextInt(100);
        if (r < 65) {
            return Op.SERVE;
        }
        if (r < 77) {
            return Op.STORE_ONLY;
        }
        if (r < 89) {
            return Op.RETRIEVE_WITHOUT_LOOKUP;
        }
        return r < 95 ? Op.ABANDONED_LOOKUP : Op.LOOKUP_ONLY;
    }

    /** The next prompt; it joins the history that later prompts continue, branch from or repeat. */
    int[] nextPrompt() {
        int r = random.nextInt(100);
        int[] prompt;
        if (history.isEmpty() || r < 15) {
            prompt = concat(systemPrompts.get(random.nextInt(systemPrompts.size())), tokens(random.nextInt(16, 256)));
        } else {
            int[] earlier = history.get(random.nextInt(history.size()));
            if (r < 50) {
                prompt = concat(earlier, tokens(random.nextInt(16, 192))); // the conversation's next turn
            } else if (r < 75) {
                prompt = concat(Arrays.copyOf(earlier, random.nextInt(earlier.length + 1)), tokens(random.nextInt(16, 192)));
            } else {
                prompt = earlier; // asked again
            }
        }
        prompt = Arrays.copyOf(prompt, Math.min(prompt.length, maxTokens));
        if (history.size() < HISTORY) {
            history.add(prompt);
        } else {
            history.set(random.nextInt(HISTORY), prompt);
        }
        return prompt;
    }

    /** Slots for {@code tokens} tokens over a random block table of a paged cache of {@code blocks} blocks. */
    long[] slots(int tokens, int blocks, int blockSize) {
        int[] table = new int[blocks];
        for (int b = 0; b < blocks; b++) {
            table[b] = b;
        }
        for (int b = blocks - 1; b > 0; b--) {
            int other = random.nextInt(b + 1);
            int swap = table[b];
            table[b] = table[other];
            table[other] = swap;
        }
        long[] slots = new long[tokens];
        for (int t = 0; t < tokens; t++) {
            slots[t] = (long) table[t / blockSize] * blockSize + t % blockSize;
        }
        return slots;
    }

    private int[] tokens(int n) {
        int[] tokens = new int[n];
        for (int i = 0; i < n; i++) {
            tokens[i] = random.nextInt(VOCABULARY);
        }
        return tokens;
    }

    private static int[] concat(int[] a, int[] b) {
        int[] c = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, c, a.length, b.length);
        return c;
    }
}
