package lmcache4j.jlama;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.github.tjake.jlama.math.ActivationFunction;
import com.github.tjake.jlama.model.gpt2.GPT2Config;
import com.github.tjake.jlama.model.llama.LlamaConfig;
import com.github.tjake.jlama.safetensors.Config;

import org.junit.jupiter.api.Test;

/**
 * The longest prompt a prefill accepts, from the model's config alone: one position short of the
 * context, and no position past the last one Jlama 0.8.4's rotary table covers for every KV head.
 * Jlama reads row {@code p·headSize/2 + h·headSize + j} ({@code j < headSize/2}) for KV head
 * {@code h} at position {@code p}, of a table of {@code context × headSize/2} rows; with head size
 * 16 and a context of 600 that is 4,800 rows. ({@code CachedPrefillEdgesTest} shows Jlama failing
 * one token past the limit.)
 */
class PromptLimitTest {
    private static Config llama(int heads, int kvHeads) {
        return new LlamaConfig(600, 64, 128, heads, kvHeads, 2, 1e-5f, 1015, 1, 2, ActivationFunction.Type.SILU, null, null);
    }

    @Test
    void theLongestPromptEndsWhereTheRotaryTableEndsForTheLastKvHead() {
        assertEquals(598, CachedPrefill.longestPrompt(llama(4, 2)), "2 KV heads: 597·8 + 16 + 7 is row 4,799");
        assertEquals(594, CachedPrefill.longestPrompt(llama(4, 4)), "4 heads, no grouping: 593·8 + 48 + 7 is row 4,799");
        assertEquals(599, CachedPrefill.longestPrompt(llama(4, 1)), "one KV head: the table covers every position; one short of the context");
        assertEquals(599, CachedPrefill.longestPrompt(new GPT2Config(600, 64, 4, 2, 1e-5f, 1015, 1, 2)),
                "no rotary table (learned positions): one short of the context");
    }
}
