package lmcache4j.server.mp.wire;

import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * LMCache's {@code RegisterEngineDrivenContextPayload} (docs/design/mp-server.md §4.2): what a
 * worker tells the server about its KV layout before engine-driven transfers. lmcache4j serves the
 * single-group layout only; a payload that carried a non-empty multi-group field is still decoded,
 * with those fields' names in {@code multiGroupFields}, so the server can answer with a
 * {@link RegisterEngineDrivenContextResponse#rejected rejection} instead of dropping the call.
 *
 * @param instanceId the worker's id (its PID)
 * @param modelName the model
 * @param worldSize the worker's world size used in keys
 * @param blockSize vLLM's tokens per paged block
 * @param numLayers the model's layers
 * @param hiddenDimSize the per-rank flattened {@code num_kv_heads × head_size}
 * @param dtypeStr a torch dtype name without the {@code torch.} prefix ({@code float16}, …)
 * @param useMla whether the KV format is MLA (one tensor instead of K and V)
 * @param numPhysicalSlots physical KV slots per chunk, when a later client sends it
 * @param multiGroupFields the multi-group fields that were present and not empty (or true)
 */
public record RegisterEngineDrivenContextPayload(long instanceId, String modelName, int worldSize, int blockSize,
        int numLayers, long hiddenDimSize, String dtypeStr, boolean useMla, OptionalLong numPhysicalSlots,
        List<String> multiGroupFields) {

    /** Copies the field list and refuses nulls. */
    public RegisterEngineDrivenContextPayload {
        Objects.requireNonNull(modelName, "modelName");
        Objects.requireNonNull(dtypeStr, "dtypeStr");
        Objects.requireNonNull(numPhysicalSlots, "numPhysicalSlots");
        multiGroupFields = List.copyOf(multiGroupFields);
    }

    /** A single-group payload, as today's clients send for ordinary (non-hybrid) models. */
    public static RegisterEngineDrivenContextPayload singleGroup(long instanceId, String modelName, int worldSize,
            int blockSize, int numLayers, long hiddenDimSize, String dtypeStr, boolean useMla) {
        return new RegisterEngineDrivenContextPayload(instanceId, modelName, worldSize, blockSize, numLayers,
                hiddenDimSize, dtypeStr, useMla, OptionalLong.empty(), List.of());
    }

    /**
     * Why lmcache4j cannot serve this registration, worded for the response's {@code error}
     * field; empty when it is a single-group layout.
     */
    public Optional<String> refusal() {
        if (multiGroupFields.isEmpty()) {
            return Optional.empty();
        }
        return Optional.of("lmcache4j serves single-group KV layouts only; this registration carries "
                + String.join(", ", multiGroupFields)
                + " (hybrid or quantized layouts are not supported by this server)");
    }
}
