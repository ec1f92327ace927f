package lmcache4j.engine;

import java.util.Objects;

import lmcache4j.engine.connector.ExternalKvCache;
import lmcache4j.engine.connector.PagedKvCache;
import lmcache4j.engine.connector.PagedLayout;
import lmcache4j.engine.key.TokenDatabase;

/** The engine's argument checks: each failure says what was wrong and what was expected. */
final class RequestChecks {
    private final ModelMetadata metadata;
    private final TokenDatabase tokens;

    RequestChecks(ModelMetadata metadata, TokenDatabase tokens) {
        this.metadata = metadata;
        this.tokens = tokens;
    }

    void check(int[] tokenIds, boolean[] mask, PagedKvCache kv, long[] slotMapping) {
        Objects.requireNonNull(tokenIds, "tokens");
        Objects.requireNonNull(slotMapping, "slotMapping");
        if (mask != null) {
            checkMask(tokenIds, mask);
        }
        checkSlots(slotMapping, tokenIds.length);
        check(kv);
    }

    void check(PreparedRequest request, PagedKvCache kv, long[] slotMapping) {
        check(request);
        Objects.requireNonNull(slotMapping, "slotMapping");
        checkSlots(slotMapping, request.tokenCount());
        check(kv);
    }

    void check(PreparedRequest request, ExternalKvCache kv) {
        check(request);
        Objects.requireNonNull(kv, "kv");
        if (kv.dtype() != metadata.kvDtype() || kv.layerCount() != metadata.numLayers()
                || kv.numKvHeads() != metadata.numKvHeads() || kv.headSize() != metadata.headSize() || metadata.mla()) {
            throw new IllegalArgumentException("the KV cache (" + kv.layerCount() + " layers, " + kv.numKvHeads()
                    + " heads × " + kv.headSize() + ", " + kv.dtype().torchName() + ") does not match the model ("
                    + metadata + ")");
        }
        if (request.tokenCount() > kv.capacity()) {
            throw new IllegalArgumentException(request + " has " + request.tokenCount() + " tokens, the KV cache holds "
                    + kv.capacity() + " positions");
        }
    }

    /** The request was prepared by this engine's token database. */
    void check(PreparedRequest request) {
        Objects.requireNonNull(request, "request");
        if (!request.preparedBy(tokens)) {
            throw new IllegalArgumentException(request + " was prepared by another engine; prepare it with this one");
        }
    }

    void check(PagedKvCache kv) {
        Objects.requireNonNull(kv, "kv");
        if (kv.dtype() != metadata.kvDtype() || kv.layerCount() != metadata.numLayers()
                || kv.numKvHeads() != metadata.numKvHeads() || kv.headSize() != metadata.headSize()
                || (kv.layout() == PagedLayout.MLA) != metadata.mla()) {
            throw new IllegalArgumentException("the paged KV cache (" + kv.layerCount() + " layers, " + kv.numKvHeads()
                    + " heads × " + kv.headSize() + ", " + kv.dtype().torchName() + ", " + kv.layout()
                    + ") does not match the model (" + metadata + ")");
        }
    }

    /** A mask for {@code tokenIds}: one entry per token. */
    static void checkMask(int[] tokenIds, boolean[] mask) {
        Objects.requireNonNull(mask, "mask");
        if (mask.length != tokenIds.length) {
            throw new IllegalArgumentException("mask has " + mask.length + " entries for " + tokenIds.length + " tokens");
        }
    }

    private static void checkSlots(long[] slotMapping, int tokenCount) {
        if (slotMapping.length < tokenCount) {
            throw new IllegalArgumentException("slot mapping has " + slotMapping.length + " entries for " + tokenCount + " tokens");
        }
    }
}
