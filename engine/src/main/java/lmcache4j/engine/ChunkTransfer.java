package lmcache4j.engine;

import java.util.Objects;

import lmcache4j.allocator.DType;
import lmcache4j.allocator.MemoryFormat;
import lmcache4j.allocator.MemoryObj;
import lmcache4j.allocator.TensorShape;
import lmcache4j.engine.connector.ChunkMismatchException;
import lmcache4j.engine.connector.ExternalKvCache;
import lmcache4j.engine.connector.KvConnector;
import lmcache4j.engine.connector.PagedKvCache;

/**
 * How one store or retrieve moves whole chunks between a serving engine's KV and chunk objects: a
 * paged cache through the engine's {@link KvConnector}, or an {@link ExternalKvCache} that copies
 * itself. Both use LMCache's whole-chunk object ({@code KV_2LTD}, or {@code KV_MLA_FMT}).
 */
sealed interface ChunkTransfer {
    /** The object shape for a chunk of {@code tokens} tokens. */
    TensorShape shape(int tokens);

    DType dtype();

    MemoryFormat format();

    /** Copies tokens {@code [start, end)} into {@code obj}; returns the bytes copied. */
    long gather(int start, int end, MemoryObj obj);

    /**
     * Copies {@code obj} into tokens {@code [start, end)}; returns the bytes copied.
     *
     * @throws ChunkMismatchException before copying, when {@code obj} is not a chunk of this KV's
     *         shape, dtype and format
     */
    long scatter(MemoryObj obj, int start, int end);

    /** Waits for copies still in flight. */
    void finish();

    record Paged(KvConnector connector, PagedKvCache kv, long[] slots) implements ChunkTransfer {
        @Override
        public TensorShape shape(int tokens) {
            return KvConnector.chunkShape(kv, tokens);
        }

        @Override
        public DType dtype() {
            return kv.dtype();
        }

        @Override
        public MemoryFormat format() {
            return KvConnector.chunkFormat(kv);
        }

        @Override
        public long gather(int start, int end, MemoryObj obj) {
            return connector.fromPaged(kv, slots, start, end, obj);
        }

        @Override
        public long scatter(MemoryObj obj, int start, int end) {
            return connector.toPaged(obj, kv, slots, start, end);
        }

        @Override
        public void finish() {
            connector.finish();
        }
    }

    record External(ExternalKvCache kv) implements ChunkTransfer {
        public External {
            Objects.requireNonNull(kv, "kv");
        }

        @Override
        public TensorShape shape(int tokens) {
            return TensorShape.of(2, kv.layerCount(), tokens, kv.hidden());
        }

        @Override
        public DType dtype() {
            return kv.dtype();
        }

        @Override
        public MemoryFormat format() {
            return MemoryFormat.KV_2LTD;
        }

        @Override
        public long gather(int start, int end, MemoryObj obj) {
            kv.gather(start, end, obj.segment());
            return obj.segment().byteSize();
        }

        @Override
        public long scatter(MemoryObj obj, int start, int end) {
            TensorShape expected = shape(end - start);
            if (!obj.shape().equals(expected) || obj.dtype() != dtype() || obj.format() != format()) {
                throw new ChunkMismatchException(obj + " does not fit tokens [" + start + ", " + end
                        + ") of this cache: expected " + format() + " " + expected + " " + dtype().torchName());
            }
            kv.scatter(obj.segment(), start, end);
            return obj.segment().byteSize();
        }

        @Override
        public void finish() {
        }
    }
}
