package lmcache4j.server.mp.wire;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;

import org.msgpack.core.MessageFormat;
import org.msgpack.core.MessagePack;
import org.msgpack.core.MessagePackException;
import org.msgpack.core.MessageUnpacker;
import org.msgpack.value.ValueType;

import lmcache4j.engine.controller.message.UniversalBuffer;

/**
 * Every operation of LMCache's multiprocess protocol, with the frozen wire id a client sends for
 * it, its snake_case name, whether lmcache4j serves it and how many argument frames it accepts.
 *
 * <p>The table is LMCache's {@code LEGACY_OPERATION_IDS} as of the wire pin, LMCache commit
 * {@code 0be164ed091d95c19a6a1f37005609d33dae7efe}
 * ({@code lmcache/v1/multiprocess/transport/zmq_impl/wire.py}); docs/design/mp-server.md §3 lists
 * the ids, the served set and the arities. Ids 1–7 carry CUDA IPC handles (pickled tensors) and
 * 25–34 are blend, P2P, experimental and KV-event operations: lmcache4j recognises and refuses them.
 */
public enum MpOperation {
    REGISTER_KV_CACHE(1, "register_kv_cache"),
    UNREGISTER_KV_CACHE(2, "unregister_kv_cache"),
    REGISTER_Q_CACHE(3, "register_q_cache"),
    UNREGISTER_Q_CACHE(4, "unregister_q_cache"),
    STORE_Q(5, "store_q"),
    STORE(6, "store"),
    RETRIEVE(7, "retrieve"),
    LOOKUP(8, "lookup", 2, 2),
    QUERY_PREFETCH_STATUS(9, "query_prefetch_status", 1, 1),
    WAIT_PREFETCH_STATUS(10, "wait_prefetch_status", 2, 2),
    QUERY_PREFETCH_LOOKUP_HITS(11, "query_prefetch_lookup_hits", 1, 1),
    FREE_LOOKUP_LOCKS(12, "free_lookup_locks", 2, 2),
    /** One frame in the pinned contract; a newer one adds {@code end_info}, accepted and ignored. */
    END_SESSION(13, "end_session", 1, 2),
    REGISTER_KV_CACHE_ENGINE_DRIVEN_CONTEXT(14, "register_kv_cache_engine_driven_context", 1, 1),
    UNREGISTER_KV_CACHE_ENGINE_DRIVEN_CONTEXT(15, "unregister_kv_cache_engine_driven_context", 1, 1),
    PREPARE_STORE(16, "prepare_store", 2, 2),
    COMMIT_STORE(17, "commit_store", 3, 3),
    PREPARE_RETRIEVE(18, "prepare_retrieve", 2, 2),
    COMMIT_RETRIEVE(19, "commit_retrieve", 2, 2),
    /** {@code force} in the pinned contract, none in LMCache's management module: 0 or 1 frames. */
    CLEAR(20, "clear", 0, 1),
    GET_CHUNK_SIZE(21, "get_chunk_size", 0, 0),
    PING(22, "ping", 1, 1),
    /** Observability only: accepted and ignored. */
    REPORT_BLOCK_ALLOCATION(23, "report_block_allocation", 3, 3),
    NOOP(24, "noop", 0, 0),
    CB_REGISTER_ROPE(25, "cb_register_rope"),
    CB_UNREGISTER_ROPE(26, "cb_unregister_rope"),
    CB_RETRIEVE_PRE_COMPUTED(27, "cb_retrieve_pre_computed"),
    CB_UNIFIED_LOOKUP(28, "cb_unified_lookup"),
    P2P_LOOKUP_AND_LOCK(29, "p2p_lookup_and_lock"),
    P2P_QUERY_LOOKUP_RESULTS(30, "p2p_query_lookup_results"),
    P2P_UNLOCK_OBJECTS(31, "p2p_unlock_objects"),
    GET_EXPERIMENTAL(32, "get_experimental"),
    CB_PROTOCOL_HANDSHAKE(33, "cb_protocol_handshake"),
    POLL_KV_EVENTS(34, "poll_kv_events");

    /** The longest op name accepted on the wire; every real name is far shorter. */
    public static final int MAX_NAME_BYTES = 128;

    private static final MpOperation[] BY_ID = new MpOperation[35];
    private static final Map<String, MpOperation> BY_NAME = new HashMap<>();

    static {
        UniversalBuffer.select(); // before msgpack-core's first use: no sun.misc.Unsafe (decode)
        for (MpOperation op : values()) {
            BY_ID[op.id] = op;
            BY_NAME.put(op.wireName, op);
        }
        // Deprecated spellings the frozen-table tests map onto 25-27.
        BY_NAME.put("cb_register_rope_v3", CB_REGISTER_ROPE);
        BY_NAME.put("cb_unregister_rope_v3", CB_UNREGISTER_ROPE);
        BY_NAME.put("cb_retrieve_pre_computed_v3", CB_RETRIEVE_PRE_COMPUTED);
    }

    private final int id;
    private final String wireName;
    private final boolean served;
    private final int minArgs;
    private final int maxArgs;

    /** A refused operation: its payload is never decoded, so any argument count passes. */
    MpOperation(int id, String wireName) {
        this.id = id;
        this.wireName = wireName;
        this.served = false;
        this.minArgs = 0;
        this.maxArgs = Integer.MAX_VALUE;
    }

    /** A served operation taking {@code minArgs..maxArgs} argument frames. */
    MpOperation(int id, String wireName, int minArgs, int maxArgs) {
        this.id = id;
        this.wireName = wireName;
        this.served = true;
        this.minArgs = minArgs;
        this.maxArgs = maxArgs;
    }

    /** The frozen wire id (1–34) a client sends for this operation. */
    public int id() {
        return id;
    }

    /** LMCache's snake_case name, which a client may send instead of the id. */
    public String wireName() {
        return wireName;
    }

    /** Whether lmcache4j serves it; a refused one is logged and dropped (§3.2). */
    public boolean served() {
        return served;
    }

    /** The fewest argument frames this operation accepts. */
    public int minArgs() {
        return minArgs;
    }

    /** The most argument frames this operation accepts ({@link Integer#MAX_VALUE} when refused). */
    public int maxArgs() {
        return maxArgs;
    }

    /** Whether {@code count} argument frames is an arity this operation accepts. */
    public boolean acceptsArity(int count) {
        return count >= minArgs && count <= maxArgs;
    }

    /** The operation with a frozen wire id, if the table has one. */
    public static Optional<MpOperation> byId(long id) {
        return id >= 1 && id < BY_ID.length ? Optional.of(BY_ID[(int) id]) : Optional.empty();
    }

    /** The operation a wire name (or a deprecated {@code _v3} alias) names. */
    public static Optional<MpOperation> byName(String name) {
        return Optional.ofNullable(BY_NAME.get(name));
    }

    /**
     * Decodes an op frame the way LMCache's {@code decode_operation} does: a msgpack int is looked
     * up in the frozen table, a msgpack str by name, anything else is refused. The frame must hold
     * exactly one value.
     *
     * @throws MpProtocolException {@link MpDropReason#BAD_OP} for malformed msgpack, another type or
     *     trailing bytes; {@link MpDropReason#UNKNOWN_OP} for an id or name the table lacks
     */
    public static MpOperation decode(byte[] frame) throws MpProtocolException {
        try (MessageUnpacker in = MessagePack.newDefaultUnpacker(frame)) {
            if (!in.hasNext()) {
                throw new MpProtocolException(MpDropReason.BAD_OP, "empty op frame (expected a msgpack int or str)");
            }
            MessageFormat format = in.getNextFormat();
            MpOperation op;
            if (format.getValueType() == ValueType.INTEGER) {
                if (format == MessageFormat.UINT64) {
                    throw new MpProtocolException(MpDropReason.UNKNOWN_OP, "unknown op id above 2^63 (the frozen table has 1-34)");
                }
                long id = in.unpackLong();
                op = byId(id).orElseThrow(() -> new MpProtocolException(MpDropReason.UNKNOWN_OP,
                        "unknown op id " + id + " (the frozen table has 1-34)"));
            } else if (format.getValueType() == ValueType.STRING) {
                int length = in.unpackRawStringHeader();
                if (length > frame.length - in.getTotalReadBytes()) {
                    throw new MpProtocolException(MpDropReason.BAD_OP, "op name declares " + length
                            + " bytes but the frame has " + (frame.length - in.getTotalReadBytes()) + " left");
                }
                if (length > MAX_NAME_BYTES) {
                    throw new MpProtocolException(MpDropReason.UNKNOWN_OP,
                            "op name of " + length + " bytes (no operation name is longer than " + MAX_NAME_BYTES + ")");
                }
                String name = new String(in.readPayload(length), StandardCharsets.UTF_8);
                op = byName(name).orElseThrow(() -> new MpProtocolException(MpDropReason.UNKNOWN_OP,
                        "unknown op name '" + name + "'"));
            } else {
                throw new MpProtocolException(MpDropReason.BAD_OP,
                        "op frame holds a msgpack " + format.getValueType() + " (expected an int or a str)");
            }
            if (in.hasNext()) {
                throw new MpProtocolException(MpDropReason.BAD_OP, "op frame has bytes after its value");
            }
            return op;
        } catch (IOException | MessagePackException e) {
            throw new MpProtocolException(MpDropReason.BAD_OP, "op frame is not valid msgpack: " + e.getMessage(), e);
        }
    }
}
