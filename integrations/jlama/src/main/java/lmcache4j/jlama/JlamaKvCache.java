package lmcache4j.jlama;

import java.lang.foreign.MemorySegment;
import java.util.Objects;

import com.github.tjake.jlama.model.AbstractModel;
import com.github.tjake.jlama.safetensors.Config;
import com.github.tjake.jlama.tensor.AbstractTensor;
import com.github.tjake.jlama.tensor.KvBufferCache;

import lmcache4j.allocator.DType;
import lmcache4j.engine.connector.ExternalKvCache;

/**
 * One Jlama {@link KvBufferCache.KvBuffer} as the engine sees it. Jlama keeps a sequence's KV in
 * pages of {@code [layers per page, 2 (K, V), positions per page, kvLength]} elements; for one layer
 * and plane, a page's positions are contiguous, so a chunk is copied as one {@link MemorySegment#copy}
 * per layer, plane and page the chunk touches (Jlama's public {@code get…TensorsUptoPosition} gives
 * the page slices), never token by token.
 */
public final class JlamaKvCache implements ExternalKvCache {
    private final KvBufferCache.KvBuffer buffer;
    private final DType dtype;
    private final long elementBytes;
    private final int layers;
    private final int kvHeads;
    private final int headSize;
    private final int kvLength;
    private final int capacity;

    /**
     * @param model  the model whose forward pass fills {@code buffer}
     * @param buffer a KV buffer of {@code model}'s
     */
    public JlamaKvCache(AbstractModel model, KvBufferCache.KvBuffer buffer) {
        Objects.requireNonNull(model, "model");
        this.buffer = Objects.requireNonNull(buffer, "buffer");
        Config c = model.getConfig();
        this.dtype = dtypeOf(model);
        this.elementBytes = dtype.byteSize();
        this.layers = c.numberOfLayers;
        this.kvHeads = c.numberOfKeyValueHeads;
        this.headSize = c.headSize;
        this.kvLength = c.kvLength;
        this.capacity = c.contextLength;
        if (c.dctx().kvSegmentLength != kvLength || c.dctx().numberOfLayers != layers) {
            throw new IllegalArgumentException("a Jlama model split across workers (distributed context) is not supported:"
                    + " its KV holds " + c.dctx().kvSegmentLength + " of " + kvLength + " elements and "
                    + c.dctx().numberOfLayers + " of " + layers + " layers");
        }
        if (kvLength != kvHeads * headSize) {
            throw new IllegalArgumentException("KV length " + kvLength + " is not KV heads " + kvHeads + " × head size " + headSize);
        }
    }

    /** The engine's element type for a model's working dtype (F32 or BF16, the KV buffer's types). */
    public static DType dtypeOf(AbstractModel model) {
        return switch (model.getWorkingDType()) {
            case F32 -> DType.FLOAT32;
            case BF16 -> DType.BFLOAT16;
            default -> throw new IllegalArgumentException("Jlama keeps KV in F32 or BF16; this model works in "
                    + model.getWorkingDType());
        };
    }

    /** The Jlama buffer this cache copies in and out of. */
    public KvBufferCache.KvBuffer buffer() {
        return buffer;
    }

    @Override
    public DType dtype() {
        return dtype;
    }

    @Override
    public int layerCount() {
        return layers;
    }

    @Override
    public int numKvHeads() {
        return kvHeads;
    }

    @Override
    public int headSize() {
        return headSize;
    }

    @Override
    public int capacity() {
        return capacity;
    }

    @Override
    public void gather(int start, int end, MemorySegment chunk) {
        copy(start, end, chunk, true);
    }

    @Override
    public void scatter(MemorySegment chunk, int start, int end) {
        copy(start, end, chunk, false);
    }

    private void copy(int start, int end, MemorySegment chunk, boolean toChunk) {
        if (start < 0 || end <= start || end > capacity) {
            throw new IllegalArgumentException("positions [" + start + ", " + end + ") are not inside the KV buffer's "
                    + capacity);
        }
        int tokens = end - start;
        long rowBytes = kvLength * elementBytes;
        long expected = 2L * layers * tokens * rowBytes;
        if (chunk.byteSize() != expected) {
            throw new IllegalArgumentException("a chunk of " + tokens + " tokens is " + expected + " bytes here, got "
                    + chunk.byteSize());
        }
        for (int plane = 0; plane < 2; plane++) {
            for (int layer = 0; layer < layers; layer++) {
                AbstractTensor[] pages = plane == 0 ? buffer.getKeyTensorsUptoPosition(layer, end - 1)
                        : buffer.getValTensorsUptoPosition(layer, end - 1);
                int perPage = pages[0].shape().first();
                long chunkBase = ((long) plane * layers + layer) * tokens * rowBytes;
                int pos = start;
                while (pos < end) {
                    AbstractTensor page = pages[pos / perPage];
                    if (page.shape().isSparse() || page.shape().last() != kvLength) {
                        throw new IllegalStateException("Jlama KV page of shape " + page.shape() + " is not dense rows of "
                                + kvLength);
                    }
                    int row = pos % perPage;
                    int run = Math.min(end - pos, perPage - row);
                    MemorySegment segment = page.getMemorySegment();
                    long pageOffset = page.getMemorySegmentOffset(page.getOffset(row, 0));
                    long chunkOffset = chunkBase + (long) (pos - start) * rowBytes;
                    long bytes = run * rowBytes;
                    if (toChunk) {
                        MemorySegment.copy(segment, pageOffset, chunk, chunkOffset, bytes);
                    } else {
                        MemorySegment.copy(chunk, chunkOffset, segment, pageOffset, bytes);
                    }
                    pos += run;
                }
            }
        }
    }
}
