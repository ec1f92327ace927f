package lmcache4j.jlama;

import java.lang.reflect.Field;
import java.util.Optional;

import com.github.tjake.jlama.model.AbstractModel;
import com.github.tjake.jlama.model.TransformerBlock;
import com.github.tjake.jlama.model.functions.EmbedInput;
import com.github.tjake.jlama.safetensors.Config;
import com.github.tjake.jlama.tensor.AbstractTensor;
import com.github.tjake.jlama.tensor.KvBufferCache;

/**
 * One Jlama layer at a time, over a run of contiguous positions: what a blended prefill needs and
 * Jlama 0.8.4's public API does not offer ({@code batchForward} runs every layer).
 *
 * <p>What is used, and why it is the smallest sound way: a model keeps its input embedding and its
 * {@link TransformerBlock}s in the protected fields {@code embedInput} and {@code transformerBlocks}
 * of {@link AbstractModel}; they are read once here by reflection (Jlama is an automatic module, so
 * its packages are open). Everything after that is Jlama's public API:
 * {@link EmbedInput#batchInputsToEmbeddings(int[], int)} and
 * {@link TransformerBlock#forward(AbstractTensor, int, KvBufferCache.KvBuffer, Optional)}, the very
 * calls {@code AbstractModel.batchForward} makes, one layer instead of all. A block's forward over
 * positions {@code [start, start + n)} writes their keys and values into the KV buffer and lets each
 * attend to every position up to itself, whatever the buffer holds there, cached or computed: so a
 * run of selected positions attends over the mixed KV exactly as CacheBlend needs. Subclassing the
 * model instead would mean loading it through a model class of our own in place of
 * {@code ModelSupport.loadModel}, for every architecture.
 */
final class JlamaLayers {
    private final TransformerBlock[] blocks;
    private final EmbedInput embedding;

    JlamaLayers(AbstractModel model) {
        Config c = model.getConfig();
        if (c.dctx().layerStart != 0 || c.dctx().layerEnd != c.numberOfLayers) {
            throw new IllegalArgumentException("a Jlama model split across workers (layers " + c.dctx().layerStart + " to "
                    + c.dctx().layerEnd + " of " + c.numberOfLayers + ") cannot be blended");
        }
        this.blocks = (TransformerBlock[]) field(model, "transformerBlocks");
        this.embedding = (EmbedInput) field(model, "embedInput");
        if (blocks.length != c.numberOfLayers) {
            throw new IllegalStateException("Jlama model holds " + blocks.length + " blocks for " + c.numberOfLayers + " layers");
        }
    }

    private static Object field(AbstractModel model, String name) {
        try {
            Field f = AbstractModel.class.getDeclaredField(name);
            f.setAccessible(true);
            return f.get(model);
        } catch (ReflectiveOperationException | RuntimeException e) {
            throw new IllegalStateException("this Jlama version does not keep AbstractModel." + name
                    + " as 0.8.4 does; blending needs it to run one layer at a time", e);
        }
    }

    /** Layers of the model. */
    int count() {
        return blocks.length;
    }

    /** The input embeddings of {@code tokens} at positions {@code start…} (a new tensor). */
    AbstractTensor embed(int[] tokens, int start) {
        return embedding.batchInputsToEmbeddings(tokens, start);
    }

    /**
     * Layer {@code layer} over positions {@code [start, start + rows)} of {@code hidden}: writes their
     * K and V into {@code buffer} and returns the layer's output (a new tensor; {@code hidden} stays
     * the caller's to close).
     */
    AbstractTensor forward(int layer, AbstractTensor hidden, int start, KvBufferCache.KvBuffer buffer) {
        return blocks[layer].forward(hidden, start, buffer, Optional.empty());
    }
}
