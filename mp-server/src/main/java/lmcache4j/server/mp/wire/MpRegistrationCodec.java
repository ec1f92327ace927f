package lmcache4j.server.mp.wire;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;

import org.msgpack.value.ValueType;

/**
 * Reads LMCache's {@code RegisterEngineDrivenContextPayload} and writes its
 * {@code RegisterEngineDrivenContextResponse} (docs/design/mp-server.md §4.2–4.3), byte-exact
 * with msgspec 0.22.0. Payload maps are read by key in any order; unknown keys are skipped.
 */
public final class MpRegistrationCodec {
    /** The longest dtype name accepted, in bytes ({@code float8_e4m3fnuz} is 15). */
    public static final int MAX_DTYPE_BYTES = 64;

    /** Payload fields that describe hybrid or quantized layouts, which lmcache4j refuses when used. */
    private static final List<String> MULTI_GROUP_FIELDS = List.of("group_layouts", "engine_group_infos",
            "group_hidden_dim_sizes", "group_layout_descs", "enable_l1_kvweave_quant", "object_group_layout_shapes",
            "transfer_metadata_wire");

    private MpRegistrationCodec() {
    }

    /**
     * Decodes a registration payload frame. A used multi-group field is not an error here: it is
     * listed in {@link RegisterEngineDrivenContextPayload#multiGroupFields()} so that the server can
     * reply with {@link RegisterEngineDrivenContextPayload#refusal()}.
     *
     * @throws MpProtocolException {@link MpDropReason#BAD_ARGUMENT} for malformed msgpack, a wrong
     *     type or a missing required field
     */
    public static RegisterEngineDrivenContextPayload decodePayload(byte[] frame) throws MpProtocolException {
        try (MpReader in = MpReader.of(frame)) {
            Long instanceId = null;
            String modelName = null;
            Long worldSize = null;
            Long blockSize = null;
            Long numLayers = null;
            Long hiddenDimSize = null;
            String dtypeStr = null;
            Boolean useMla = null;
            OptionalLong numPhysicalSlots = OptionalLong.empty();
            List<String> multiGroup = new ArrayList<>();
            int entries = in.readMapHeader("RegisterEngineDrivenContextPayload");
            for (int i = 0; i < entries; i++) {
                String field = in.readString("RegisterEngineDrivenContextPayload field name", MpKeyCodec.MAX_STRING_BYTES);
                switch (field) {
                    case "instance_id" -> instanceId = in.readLong("instance_id", Long.MIN_VALUE, Long.MAX_VALUE);
                    case "model_name" -> modelName = in.readString("model_name", MpKeyCodec.MAX_STRING_BYTES);
                    case "world_size" -> worldSize = in.readLong("world_size", 1, IpcCacheServerKey.MAX_WORLD_SIZE);
                    case "block_size" -> blockSize = in.readLong("block_size", 0, Integer.MAX_VALUE);
                    case "num_layers" -> numLayers = in.readLong("num_layers", 0, Integer.MAX_VALUE);
                    case "hidden_dim_size" -> hiddenDimSize = in.readLong("hidden_dim_size", 0, Long.MAX_VALUE);
                    case "dtype_str" -> dtypeStr = in.readString("dtype_str", MAX_DTYPE_BYTES);
                    case "use_mla" -> useMla = in.readBool("use_mla");
                    case "num_physical_slots" -> numPhysicalSlots = in.tryNil("num_physical_slots")
                            ? OptionalLong.empty()
                            : OptionalLong.of(in.readLong("num_physical_slots", 0, Long.MAX_VALUE));
                    default -> {
                        if (MULTI_GROUP_FIELDS.contains(field)) {
                            if (isUsed(in, field) && !multiGroup.contains(field)) {
                                multiGroup.add(field);
                            }
                        } else {
                            in.skipValue("RegisterEngineDrivenContextPayload." + field);
                        }
                    }
                }
            }
            in.expectEnd("RegisterEngineDrivenContextPayload");
            return new RegisterEngineDrivenContextPayload(required(instanceId, "instance_id"),
                    required(modelName, "model_name"), required(worldSize, "world_size").intValue(),
                    required(blockSize, "block_size").intValue(), required(numLayers, "num_layers").intValue(),
                    required(hiddenDimSize, "hidden_dim_size"), required(dtypeStr, "dtype_str"),
                    required(useMla, "use_mla"), numPhysicalSlots, multiGroup);
        }
    }

    /** Reads a multi-group field's value: nil, an empty container and {@code false} mean unused. */
    private static boolean isUsed(MpReader in, String field) throws MpProtocolException {
        ValueType type = in.nextType(field);
        switch (type) {
            case NIL -> {
                in.tryNil(field);
                return false;
            }
            case BOOLEAN -> {
                return in.readBool(field);
            }
            case ARRAY -> {
                int count = in.readArrayHeader(field, Integer.MAX_VALUE);
                for (int i = 0; i < count; i++) {
                    in.skipValue(field);
                }
                return count > 0;
            }
            case MAP -> {
                int count = in.readMapHeader(field);
                for (int i = 0; i < 2 * count; i++) {
                    in.skipValue(field);
                }
                return count > 0;
            }
            default -> {
                in.skipValue(field);
                return true;
            }
        }
    }

    private static <T> T required(T value, String field) throws MpProtocolException {
        if (value == null) {
            throw MpReader.bad("RegisterEngineDrivenContextPayload: missing required field '" + field + "'");
        }
        return value;
    }

    /**
     * Encodes a single-group payload with every field of {@code schema} in LMCache's order, the
     * multi-group fields at their empty defaults (what a Python client sends for such a model).
     *
     * @throws IllegalArgumentException if the payload lists used multi-group fields, whose content
     *     the record does not keep
     */
    public static byte[] encodePayload(RegisterEngineDrivenContextPayload payload, MpSchema schema) {
        if (!payload.multiGroupFields().isEmpty()) {
            throw new IllegalArgumentException("cannot encode multi-group fields " + payload.multiGroupFields()
                    + " (the record keeps only their names)");
        }
        MpWriter out = new MpWriter().mapHeader(schema == MpSchema.BASE ? 9 : 13);
        out.key("instance_id").integer(payload.instanceId());
        out.key("model_name").string(payload.modelName());
        out.key("world_size").integer(payload.worldSize());
        out.key("block_size").integer(payload.blockSize());
        out.key("num_layers").integer(payload.numLayers());
        out.key("hidden_dim_size").integer(payload.hiddenDimSize());
        out.key("dtype_str").string(payload.dtypeStr());
        out.key("use_mla").bool(payload.useMla());
        if (schema == MpSchema.BASE) {
            out.key("group_layouts").arrayHeader(0);
        } else {
            out.key("num_physical_slots");
            if (payload.numPhysicalSlots().isPresent()) {
                out.integer(payload.numPhysicalSlots().getAsLong());
            } else {
                out.nil();
            }
            out.key("engine_group_infos").arrayHeader(0);
            out.key("group_hidden_dim_sizes").nil();
            out.key("group_layout_descs").nil();
            out.key("enable_l1_kvweave_quant").bool(false);
        }
        return out.toByteArray();
    }

    /** Encodes the five-field response in LMCache's order (byte-exact with msgspec). */
    public static byte[] encodeResponse(RegisterEngineDrivenContextResponse response) {
        MpWriter out = new MpWriter().mapHeader(5);
        out.key("shm_name").string(response.shmName());
        out.key("pool_size").integer(response.poolSize());
        out.key("scratch_offset").integer(response.scratchOffset());
        out.key("scratch_size").integer(response.scratchSize());
        out.key("error");
        if (response.error().isPresent()) {
            out.string(response.error().get());
        } else {
            out.nil();
        }
        return out.toByteArray();
    }

    /**
     * Decodes a response frame (a Java client's side), by key with LMCache's defaults for missing
     * keys, so the two-field responses of older servers decode too.
     *
     * @throws MpProtocolException {@link MpDropReason#BAD_ARGUMENT} for malformed msgpack or a wrong type
     */
    public static RegisterEngineDrivenContextResponse decodeResponse(byte[] frame) throws MpProtocolException {
        try (MpReader in = MpReader.of(frame)) {
            String shmName = "";
            long poolSize = 0;
            long scratchOffset = 0;
            long scratchSize = 0;
            Optional<String> error = Optional.empty();
            int entries = in.readMapHeader("RegisterEngineDrivenContextResponse");
            for (int i = 0; i < entries; i++) {
                String field = in.readString("RegisterEngineDrivenContextResponse field name", MpKeyCodec.MAX_STRING_BYTES);
                switch (field) {
                    case "shm_name" -> shmName = in.readString("shm_name", MpKeyCodec.MAX_STRING_BYTES);
                    case "pool_size" -> poolSize = in.readLong("pool_size", 0, Long.MAX_VALUE);
                    case "scratch_offset" -> scratchOffset = in.readLong("scratch_offset", 0, Long.MAX_VALUE);
                    case "scratch_size" -> scratchSize = in.readLong("scratch_size", 0, Long.MAX_VALUE);
                    case "error" -> error = in.tryNil("error") ? Optional.empty()
                            : Optional.of(in.readString("error", Integer.MAX_VALUE));
                    default -> in.skipValue("RegisterEngineDrivenContextResponse." + field);
                }
            }
            in.expectEnd("RegisterEngineDrivenContextResponse");
            return new RegisterEngineDrivenContextResponse(shmName, poolSize, scratchOffset, scratchSize, error);
        }
    }
}
