package lmcache4j.engine.controller.message;

import static lmcache4j.engine.controller.message.FieldCodecs.BOOL;
import static lmcache4j.engine.controller.message.FieldCodecs.F64;
import static lmcache4j.engine.controller.message.FieldCodecs.I32;
import static lmcache4j.engine.controller.message.FieldCodecs.I64;
import static lmcache4j.engine.controller.message.FieldCodecs.INT_LIST;
import static lmcache4j.engine.controller.message.FieldCodecs.INT_MAP;
import static lmcache4j.engine.controller.message.FieldCodecs.KEY;
import static lmcache4j.engine.controller.message.FieldCodecs.KEYS;
import static lmcache4j.engine.controller.message.FieldCodecs.KV_OPS;
import static lmcache4j.engine.controller.message.FieldCodecs.LAYOUTS;
import static lmcache4j.engine.controller.message.FieldCodecs.LONGS;
import static lmcache4j.engine.controller.message.FieldCodecs.P2P_HOLDERS;
import static lmcache4j.engine.controller.message.FieldCodecs.POSITION;
import static lmcache4j.engine.controller.message.FieldCodecs.STR;
import static lmcache4j.engine.controller.message.FieldCodecs.STR_MAP;
import static lmcache4j.engine.controller.message.FieldCodecs.TOKENS;
import static lmcache4j.engine.controller.message.FieldCodecs.optional;
import static lmcache4j.engine.controller.message.StructSchema.Field.required;
import static lmcache4j.engine.controller.message.StructSchema.Field.withDefault;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;

import lmcache4j.engine.controller.message.ControlMsg.*;
import lmcache4j.engine.controller.message.ControlRetMsg.*;
import lmcache4j.engine.controller.message.OrchMsg.*;
import lmcache4j.engine.controller.message.OrchRetMsg.*;
import lmcache4j.engine.controller.message.WorkerMsg.*;
import lmcache4j.engine.controller.message.WorkerReqMsg.*;
import lmcache4j.engine.controller.message.WorkerReqRetMsg.*;

/**
 * The wire layout of every message: LMCache's field names in declaration order (inherited
 * fields first) and its defaults, as msgspec encodes them ({@code message.py},
 * {@code commands/base.py}, {@code commands/full_sync.py}).
 */
@SuppressWarnings("unchecked")
final class MessageSchemas {
    private MessageSchemas() {
    }

    static final String TYPE = "type";
    static final String COMMAND_TYPE = "command_type";

    private static final FieldCodec<Optional<String>> OPT_STR = optional(STR);
    private static final FieldCodec<Optional<int[]>> OPT_TOKENS = optional(TOKENS);
    private static final FieldCodec<Optional<Boolean>> OPT_BOOL = optional(BOOL);
    private static final FieldCodec<Optional<Map<String, Object>>> OPT_ANY_MAP = optional(FieldCodecs.ANY_MAP);

    private static <T extends ControllerMessage> StructSchema<T> msg(String tag, Class<T> type,
            StructSchema.Builder<T> builder, Function<T, Object[]> values,
            StructSchema.Field... fields) {
        return StructSchema.tagged(TYPE, tag, type, builder, values, fields);
    }

    private static Object[] v(Object... values) {
        return values;
    }

    private static final StructSchema<HeartbeatCommand.FullSyncCommand> FULL_SYNC = StructSchema.tagged(COMMAND_TYPE,
            HeartbeatCommand.FullSyncCommand.TAG, HeartbeatCommand.FullSyncCommand.class,
            a -> new HeartbeatCommand.FullSyncCommand((Optional<String>) a[0], (Optional<Map<String, Object>>) a[1]),
            m -> v(m.reason(), m.args()),
            withDefault("reason", OPT_STR, Optional.empty()), withDefault("args", OPT_ANY_MAP, Optional.empty()));

    /** {@code List[AnyCommand]}: commands tagged by {@code command_type}; unknown tags are kept as {@link HeartbeatCommand.OtherCommand}. */
    static final FieldCodec<List<HeartbeatCommand>> COMMANDS = new FieldCodec<>() {
        public List<HeartbeatCommand> read(MsgReader in, String what) throws MalformedMessageException {
            int n = in.arrayHeader(what);
            List<HeartbeatCommand> commands = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                String at = what + "[" + i + "]";
                int entries = in.mapHeader(at);
                if (entries == 0 || !in.keyIs(COMMAND_TYPE_BYTES, at + " first key")) {
                    throw new MalformedMessageException(at + ": a command's first entry must be \"command_type\"");
                }
                String tag = in.str(at + ".command_type");
                HeartbeatCommand.FullSyncCommand c = FULL_SYNC.readFields(in, entries - 1);
                commands.add(tag.equals(HeartbeatCommand.FullSyncCommand.TAG) ? c
                        : new HeartbeatCommand.OtherCommand(tag, c.reason(), c.args()));
            }
            return commands;
        }

        public void write(MsgWriter out, List<HeartbeatCommand> v) {
            out.arrayHeader(v.size());
            for (HeartbeatCommand c : v) {
                switch (c) {
                    case HeartbeatCommand.FullSyncCommand f -> FULL_SYNC.write(out, f);
                    case HeartbeatCommand.OtherCommand o -> {
                        out.mapHeader(3).str(COMMAND_TYPE).str(o.commandType()).str("reason");
                        OPT_STR.write(out, o.reason());
                        out.str("args");
                        OPT_ANY_MAP.write(out, o.args());
                    }
                }
            }
        }
    };

    private static final byte[] COMMAND_TYPE_BYTES = COMMAND_TYPE.getBytes(StandardCharsets.UTF_8);

    private static final StructSchema<WorkerInfo> WORKER_INFO = StructSchema.untagged(WorkerInfo.class,
            a -> new WorkerInfo((String) a[0], (Integer) a[1], (String) a[2], (Integer) a[3], (Optional<String>) a[4],
                    (Double) a[5], (Double) a[6]),
            m -> v(m.instanceId(), m.workerId(), m.ip(), m.port(), m.peerInitUrl(), m.registrationTime(),
                    m.lastHeartbeatTime()),
            required("instance_id", STR), required("worker_id", I32), required("ip", STR), required("port", I32),
            required("peer_init_url", OPT_STR), required("registration_time", F64),
            required("last_heartbeat_time", F64));

    /** Every message schema. */
    static final List<StructSchema<? extends ControllerMessage>> ALL = List.of(
            // WorkerMsg
            msg("DeRegisterMsg", DeRegisterMsg.class,
                    a -> new DeRegisterMsg((String) a[0], (Integer) a[1], (String) a[2], (Integer) a[3]),
                    m -> v(m.instanceId(), m.workerId(), m.ip(), m.port()),
                    required("instance_id", STR), required("worker_id", I32), required("ip", STR),
                    required("port", I32)),
            msg("KVAdmitMsg", KVAdmitMsg.class,
                    a -> new KVAdmitMsg((String) a[0], (Integer) a[1], (Long) a[2], (String) a[3], (Long) a[4]),
                    m -> v(m.instanceId(), m.workerId(), m.key(), m.location(), m.seqNum()),
                    required("instance_id", STR), required("worker_id", I32), required("key", KEY),
                    required("location", STR), withDefault("seq_num", I64, 0L)),
            msg("KVEvictMsg", KVEvictMsg.class,
                    a -> new KVEvictMsg((String) a[0], (Integer) a[1], (Long) a[2], (String) a[3], (Long) a[4]),
                    m -> v(m.instanceId(), m.workerId(), m.key(), m.location(), m.seqNum()),
                    required("instance_id", STR), required("worker_id", I32), required("key", KEY),
                    required("location", STR), withDefault("seq_num", I64, 0L)),
            msg("BatchedKVOperationMsg", BatchedKVOperationMsg.class,
                    a -> new BatchedKVOperationMsg((String) a[0], (Integer) a[1], (String) a[2], (List<KVOpEvent>) a[3]),
                    m -> v(m.instanceId(), m.workerId(), m.location(), m.operations()),
                    required("instance_id", STR), required("worker_id", I32), required("location", STR),
                    required("operations", KV_OPS)),
            msg("FullSyncBatchMsg", FullSyncBatchMsg.class,
                    a -> new FullSyncBatchMsg((String) a[0], (Integer) a[1], (String) a[2], (String) a[3], (Long) a[4],
                            (long[]) a[5]),
                    m -> v(m.instanceId(), m.workerId(), m.location(), m.syncId(), m.batchId(), m.keys()),
                    required("instance_id", STR), required("worker_id", I32), required("location", STR),
                    required("sync_id", STR), required("batch_id", I64), required("keys", KEYS)),
            msg("FullSyncEndMsg", FullSyncEndMsg.class,
                    a -> new FullSyncEndMsg((String) a[0], (Integer) a[1], (String) a[2], (String) a[3], (Long) a[4]),
                    m -> v(m.instanceId(), m.workerId(), m.location(), m.syncId(), m.actualTotalKeys()),
                    required("instance_id", STR), required("worker_id", I32), required("location", STR),
                    required("sync_id", STR), required("actual_total_keys", I64)),
            // WorkerReqMsg
            msg("RegisterMsg", RegisterMsg.class,
                    a -> new RegisterMsg((String) a[0], (Integer) a[1], (String) a[2], (Integer) a[3],
                            (Optional<String>) a[4]),
                    m -> v(m.instanceId(), m.workerId(), m.ip(), m.port(), m.peerInitUrl()),
                    required("instance_id", STR), required("worker_id", I32), required("ip", STR),
                    required("port", I32), required("peer_init_url", OPT_STR)),
            msg("HeartbeatMsg", HeartbeatMsg.class,
                    a -> new HeartbeatMsg((String) a[0], (Integer) a[1], (String) a[2], (Integer) a[3],
                            (Optional<String>) a[4]),
                    m -> v(m.instanceId(), m.workerId(), m.ip(), m.port(), m.peerInitUrl()),
                    required("instance_id", STR), required("worker_id", I32), required("ip", STR),
                    required("port", I32), required("peer_init_url", OPT_STR)),
            msg("BatchedP2PLookupMsg", BatchedP2PLookupMsg.class,
                    a -> new BatchedP2PLookupMsg((long[]) a[0], (String) a[1], (Integer) a[2]),
                    m -> v(m.hashes(), m.instanceId(), m.workerId()),
                    required("hashes", KEYS), required("instance_id", STR), required("worker_id", I32)),
            msg("FullSyncStartMsg", FullSyncStartMsg.class,
                    a -> new FullSyncStartMsg((String) a[0], (Integer) a[1], (String) a[2], (String) a[3], (Long) a[4],
                            (Long) a[5]),
                    m -> v(m.instanceId(), m.workerId(), m.location(), m.syncId(), m.totalKeys(), m.batchCount()),
                    required("instance_id", STR), required("worker_id", I32), required("location", STR),
                    required("sync_id", STR), required("total_keys", I64), required("batch_count", I64)),
            msg("FullSyncStatusMsg", FullSyncStatusMsg.class,
                    a -> new FullSyncStatusMsg((String) a[0], (Integer) a[1], (String) a[2]),
                    m -> v(m.instanceId(), m.workerId(), m.syncId()),
                    required("instance_id", STR), required("worker_id", I32), required("sync_id", STR)),
            // WorkerReqRetMsg
            msg("RegisterRetMsg", RegisterRetMsg.class,
                    a -> new RegisterRetMsg((Map<String, String>) a[0]),
                    m -> v(m.extraConfig()),
                    withDefault("extra_config", STR_MAP, Map.of())),
            msg("HeartbeatRetMsg", HeartbeatRetMsg.class,
                    a -> new HeartbeatRetMsg((List<HeartbeatCommand>) a[0]),
                    m -> v(m.commands()),
                    withDefault("commands", COMMANDS, List.of())),
            msg("BatchedP2PLookupRetMsg", BatchedP2PLookupRetMsg.class,
                    a -> new BatchedP2PLookupRetMsg((List<P2PHolder>) a[0]),
                    m -> v(m.layoutInfo()),
                    required("layout_info", P2P_HOLDERS)),
            msg("FullSyncStartRetMsg", FullSyncStartRetMsg.class,
                    a -> new FullSyncStartRetMsg((String) a[0], (Boolean) a[1], (Optional<String>) a[2]),
                    m -> v(m.syncId(), m.accepted(), m.errorMsg()),
                    required("sync_id", STR), required("accepted", BOOL),
                    withDefault("error_msg", OPT_STR, Optional.empty())),
            msg("FullSyncStatusRetMsg", FullSyncStatusRetMsg.class,
                    a -> new FullSyncStatusRetMsg((String) a[0], (Boolean) a[1], (Double) a[2], (Boolean) a[3],
                            (long[]) a[4]),
                    m -> v(m.syncId(), m.isComplete(), m.globalProgress(), m.canExitFreeze(), m.missingBatches()),
                    required("sync_id", STR), required("is_complete", BOOL), required("global_progress", F64),
                    required("can_exit_freeze", BOOL), withDefault("missing_batches", LONGS, new long[0])),
            msg("ErrorMsg", ErrorMsg.class,
                    a -> new ErrorMsg((String) a[0]),
                    m -> v(m.error()),
                    required("error", STR)),
            // ControlMsg
            msg("ClearWorkerMsg", ClearWorkerMsg.class,
                    a -> new ClearWorkerMsg((String) a[0], (String) a[1]),
                    m -> v(m.workerEventId(), m.location()),
                    required("worker_event_id", STR), required("location", STR)),
            msg("PinWorkerMsg", PinWorkerMsg.class,
                    a -> new PinWorkerMsg((String) a[0], (String) a[1], (int[]) a[2]),
                    m -> v(m.workerEventId(), m.location(), m.tokens()),
                    required("worker_event_id", STR), required("location", STR), required("tokens", TOKENS)),
            msg("CompressWorkerMsg", CompressWorkerMsg.class,
                    a -> new CompressWorkerMsg((String) a[0], (String) a[1], (String) a[2], (Optional<int[]>) a[3]),
                    m -> v(m.workerEventId(), m.method(), m.location(), m.tokens()),
                    required("worker_event_id", STR), required("method", STR), required("location", STR),
                    withDefault("tokens", OPT_TOKENS, Optional.empty())),
            msg("DecompressWorkerMsg", DecompressWorkerMsg.class,
                    a -> new DecompressWorkerMsg((String) a[0], (String) a[1], (String) a[2], (Optional<int[]>) a[3]),
                    m -> v(m.workerEventId(), m.method(), m.location(), m.tokens()),
                    required("worker_event_id", STR), required("method", STR), required("location", STR),
                    withDefault("tokens", OPT_TOKENS, Optional.empty())),
            msg("MoveWorkerMsg", MoveWorkerMsg.class,
                    a -> new MoveWorkerMsg((String) a[0], (String) a[1], (Position) a[2], (Optional<int[]>) a[3],
                            (Optional<Boolean>) a[4]),
                    m -> v(m.workerEventId(), m.oldPosition(), m.newPosition(), m.tokens(), m.copy()),
                    required("worker_event_id", STR), required("old_position", STR),
                    required("new_position", POSITION), withDefault("tokens", OPT_TOKENS, Optional.empty()),
                    withDefault("copy", OPT_BOOL, Optional.of(true))),
            msg("HealthWorkerMsg", HealthWorkerMsg.class,
                    a -> new HealthWorkerMsg((String) a[0]),
                    m -> v(m.workerEventId()),
                    required("worker_event_id", STR)),
            msg("CheckFinishWorkerMsg", CheckFinishWorkerMsg.class,
                    a -> new CheckFinishWorkerMsg((String) a[0]),
                    m -> v(m.workerEventId()),
                    required("worker_event_id", STR)),
            // ControlRetMsg
            msg("ClearWorkerRetMsg", ClearWorkerRetMsg.class, a -> new ClearWorkerRetMsg((Long) a[0]),
                    m -> v(m.numTokens()), required("num_tokens", I64)),
            msg("PinWorkerRetMsg", PinWorkerRetMsg.class, a -> new PinWorkerRetMsg((Long) a[0]),
                    m -> v(m.numTokens()), required("num_tokens", I64)),
            msg("CompressWorkerRetMsg", CompressWorkerRetMsg.class, a -> new CompressWorkerRetMsg((Long) a[0]),
                    m -> v(m.numTokens()), required("num_tokens", I64)),
            msg("DecompressWorkerRetMsg", DecompressWorkerRetMsg.class, a -> new DecompressWorkerRetMsg((Long) a[0]),
                    m -> v(m.numTokens()), required("num_tokens", I64)),
            msg("MoveWorkerRetMsg", MoveWorkerRetMsg.class, a -> new MoveWorkerRetMsg((Long) a[0]),
                    m -> v(m.numTokens()), required("num_tokens", I64)),
            msg("HealthWorkerRetMsg", HealthWorkerRetMsg.class, a -> new HealthWorkerRetMsg((Integer) a[0]),
                    m -> v(m.errorCode()), required("error_code", I32)),
            msg("CheckFinishWorkerRetMsg", CheckFinishWorkerRetMsg.class,
                    a -> new CheckFinishWorkerRetMsg((String) a[0]), m -> v(m.status()), required("status", STR)),
            // OrchMsg
            msg("QueryInstMsg", QueryInstMsg.class,
                    a -> new QueryInstMsg((String) a[0], (String) a[1]),
                    m -> v(m.eventId(), m.ip()),
                    required("event_id", STR), required("ip", STR)),
            msg("LookupMsg", LookupMsg.class,
                    a -> new LookupMsg((String) a[0], (int[]) a[1]),
                    m -> v(m.eventId(), m.tokens()),
                    required("event_id", STR), required("tokens", TOKENS)),
            msg("ClearMsg", ClearMsg.class,
                    a -> new ClearMsg((String) a[0], (String) a[1], (String) a[2]),
                    m -> v(m.eventId(), m.instanceId(), m.location()),
                    required("event_id", STR), required("instance_id", STR), required("location", STR)),
            msg("PinMsg", PinMsg.class,
                    a -> new PinMsg((String) a[0], (String) a[1], (String) a[2], (int[]) a[3]),
                    m -> v(m.eventId(), m.instanceId(), m.location(), m.tokens()),
                    required("event_id", STR), required("instance_id", STR), required("location", STR),
                    required("tokens", TOKENS)),
            msg("CompressMsg", CompressMsg.class,
                    a -> new CompressMsg((String) a[0], (String) a[1], (String) a[2], (String) a[3],
                            (Optional<int[]>) a[4]),
                    m -> v(m.eventId(), m.instanceId(), m.method(), m.location(), m.tokens()),
                    required("event_id", STR), required("instance_id", STR), required("method", STR),
                    required("location", STR), withDefault("tokens", OPT_TOKENS, Optional.empty())),
            msg("DecompressMsg", DecompressMsg.class,
                    a -> new DecompressMsg((String) a[0], (String) a[1], (String) a[2], (String) a[3],
                            (Optional<int[]>) a[4]),
                    m -> v(m.eventId(), m.instanceId(), m.method(), m.location(), m.tokens()),
                    required("event_id", STR), required("instance_id", STR), required("method", STR),
                    required("location", STR), withDefault("tokens", OPT_TOKENS, Optional.empty())),
            msg("MoveMsg", MoveMsg.class,
                    a -> new MoveMsg((String) a[0], (Position) a[1], (Position) a[2], (Optional<int[]>) a[3],
                            (Optional<Boolean>) a[4]),
                    m -> v(m.eventId(), m.oldPosition(), m.newPosition(), m.tokens(), m.copy()),
                    required("event_id", STR), required("old_position", POSITION),
                    required("new_position", POSITION), withDefault("tokens", OPT_TOKENS, Optional.empty()),
                    withDefault("copy", OPT_BOOL, Optional.of(false))),
            msg("HealthMsg", HealthMsg.class,
                    a -> new HealthMsg((String) a[0], (String) a[1]),
                    m -> v(m.eventId(), m.instanceId()),
                    required("event_id", STR), required("instance_id", STR)),
            msg("CheckFinishMsg", CheckFinishMsg.class,
                    a -> new CheckFinishMsg((String) a[0]),
                    m -> v(m.eventId()),
                    required("event_id", STR)),
            msg("QueryWorkerInfoMsg", QueryWorkerInfoMsg.class,
                    a -> new QueryWorkerInfoMsg((String) a[0], (String) a[1], (Optional<List<Integer>>) a[2]),
                    m -> v(m.eventId(), m.instanceId(), m.workerIds()),
                    required("event_id", STR), required("instance_id", STR),
                    required("worker_ids", optional(INT_LIST))),
            // OrchRetMsg
            msg("QueryInstRetMsg", QueryInstRetMsg.class,
                    a -> new QueryInstRetMsg((String) a[0], (Optional<String>) a[1]),
                    m -> v(m.eventId(), m.instanceId()),
                    required("event_id", STR), required("instance_id", OPT_STR)),
            msg("LookupRetMsg", LookupRetMsg.class,
                    a -> new LookupRetMsg((String) a[0], (Map<String, Layout>) a[1]),
                    m -> v(m.eventId(), m.layoutInfo()),
                    required("event_id", STR), required("layout_info", LAYOUTS)),
            msg("ClearRetMsg", ClearRetMsg.class, a -> new ClearRetMsg((String) a[0], (Long) a[1]),
                    m -> v(m.eventId(), m.numTokens()), required("event_id", STR), required("num_tokens", I64)),
            msg("PinRetMsg", PinRetMsg.class, a -> new PinRetMsg((String) a[0], (Long) a[1]),
                    m -> v(m.eventId(), m.numTokens()), required("event_id", STR), required("num_tokens", I64)),
            msg("CompressRetMsg", CompressRetMsg.class, a -> new CompressRetMsg((String) a[0], (Long) a[1]),
                    m -> v(m.eventId(), m.numTokens()), required("event_id", STR), required("num_tokens", I64)),
            msg("DecompressRetMsg", DecompressRetMsg.class, a -> new DecompressRetMsg((String) a[0], (Long) a[1]),
                    m -> v(m.eventId(), m.numTokens()), required("event_id", STR), required("num_tokens", I64)),
            msg("MoveRetMsg", MoveRetMsg.class, a -> new MoveRetMsg((String) a[0], (Long) a[1]),
                    m -> v(m.eventId(), m.numTokens()), required("event_id", STR), required("num_tokens", I64)),
            msg("HealthRetMsg", HealthRetMsg.class,
                    a -> new HealthRetMsg((String) a[0], (Map<Integer, Integer>) a[1]),
                    m -> v(m.eventId(), m.errorCodes()),
                    required("event_id", STR), required("error_codes", INT_MAP)),
            msg("CheckFinishRetMsg", CheckFinishRetMsg.class, a -> new CheckFinishRetMsg((String) a[0]),
                    m -> v(m.status()), required("status", STR)),
            msg("QueryWorkerInfoRetMsg", QueryWorkerInfoRetMsg.class,
                    a -> new QueryWorkerInfoRetMsg((String) a[0], (List<WorkerInfo>) a[1]),
                    m -> v(m.eventId(), m.workerInfos()),
                    required("event_id", STR), required("worker_infos", FieldCodecs.listOf(WORKER_INFO))));

    static final Map<String, StructSchema<? extends ControllerMessage>> BY_TAG = index(true);
    static final Map<Class<?>, StructSchema<? extends ControllerMessage>> BY_CLASS = byClass();

    private static Map<String, StructSchema<? extends ControllerMessage>> index(boolean unused) {
        Map<String, StructSchema<? extends ControllerMessage>> m = new LinkedHashMap<>();
        for (StructSchema<? extends ControllerMessage> s : ALL) {
            if (m.put(s.tag, s) != null) {
                throw new AssertionError("two schemas for " + s.tag);
            }
        }
        return Map.copyOf(m);
    }

    private static Map<Class<?>, StructSchema<? extends ControllerMessage>> byClass() {
        Map<Class<?>, StructSchema<? extends ControllerMessage>> m = new LinkedHashMap<>();
        ALL.forEach(s -> m.put(s.type, s));
        return Map.copyOf(m);
    }
}
