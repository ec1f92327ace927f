package lmcache4j.engine.controller.message;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/** The codecs of every field type LMCache's messages use (msgspec's encoding of each Python type). */
final class FieldCodecs {
    private FieldCodecs() {
    }

    static final FieldCodec<String> STR = new FieldCodec<>() {
        public String read(MsgReader in, String what) throws MalformedMessageException {
            return in.str(what);
        }

        public void write(MsgWriter out, String v) {
            out.str(v);
        }
    };

    static final FieldCodec<Integer> I32 = new FieldCodec<>() {
        public Integer read(MsgReader in, String what) throws MalformedMessageException {
            return in.i32(what);
        }

        public void write(MsgWriter out, Integer v) {
            out.i64(v);
        }
    };

    static final FieldCodec<Long> I64 = new FieldCodec<>() {
        public Long read(MsgReader in, String what) throws MalformedMessageException {
            return in.i64(what);
        }

        public void write(MsgWriter out, Long v) {
            out.i64(v);
        }
    };

    /** A chunk key: read from any integer in [-2^63, 2^64), written unsigned. */
    static final FieldCodec<Long> KEY = new FieldCodec<>() {
        public Long read(MsgReader in, String what) throws MalformedMessageException {
            return in.key64(what);
        }

        public void write(MsgWriter out, Long v) {
            out.key64(v);
        }
    };

    static final FieldCodec<Boolean> BOOL = new FieldCodec<>() {
        public Boolean read(MsgReader in, String what) throws MalformedMessageException {
            return in.bool(what);
        }

        public void write(MsgWriter out, Boolean v) {
            out.bool(v);
        }
    };

    static final FieldCodec<Double> F64 = new FieldCodec<>() {
        public Double read(MsgReader in, String what) throws MalformedMessageException {
            return in.f64(what);
        }

        public void write(MsgWriter out, Double v) {
            out.f64(v);
        }
    };

    /** {@code Optional[T]}: nil or a T. */
    static <T> FieldCodec<Optional<T>> optional(FieldCodec<T> codec) {
        return new FieldCodec<>() {
            public Optional<T> read(MsgReader in, String what) throws MalformedMessageException {
                return in.nil(what) ? Optional.empty() : Optional.of(codec.read(in, what));
            }

            public void write(MsgWriter out, Optional<T> v) {
                if (v.isPresent()) {
                    codec.write(out, v.get());
                } else {
                    out.nil();
                }
            }
        };
    }

    /** {@code list[int]} of token ids. */
    static final FieldCodec<int[]> TOKENS = new FieldCodec<>() {
        public int[] read(MsgReader in, String what) throws MalformedMessageException {
            int n = in.arrayHeader(what);
            int[] tokens = new int[n];
            for (int i = 0; i < n; i++) {
                tokens[i] = in.i32(what);
            }
            return tokens;
        }

        public void write(MsgWriter out, int[] v) {
            out.arrayHeader(v.length);
            for (int t : v) {
                out.i64(t);
            }
        }
    };

    /** {@code list[int]} of chunk keys. */
    static final FieldCodec<long[]> KEYS = new FieldCodec<>() {
        public long[] read(MsgReader in, String what) throws MalformedMessageException {
            int n = in.arrayHeader(what);
            long[] keys = new long[n];
            for (int i = 0; i < n; i++) {
                keys[i] = in.key64(what);
            }
            return keys;
        }

        public void write(MsgWriter out, long[] v) {
            out.arrayHeader(v.length);
            for (long k : v) {
                out.key64(k);
            }
        }
    };

    /** {@code list[int]} of ordinary (signed 64-bit) integers. */
    static final FieldCodec<long[]> LONGS = new FieldCodec<>() {
        public long[] read(MsgReader in, String what) throws MalformedMessageException {
            int n = in.arrayHeader(what);
            long[] values = new long[n];
            for (int i = 0; i < n; i++) {
                values[i] = in.i64(what);
            }
            return values;
        }

        public void write(MsgWriter out, long[] v) {
            out.arrayHeader(v.length);
            for (long x : v) {
                out.i64(x);
            }
        }
    };

    /** {@code list[int]} of small integers (worker ids). */
    static final FieldCodec<List<Integer>> INT_LIST = new FieldCodec<>() {
        public List<Integer> read(MsgReader in, String what) throws MalformedMessageException {
            int n = in.arrayHeader(what);
            List<Integer> values = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                values.add(in.i32(what));
            }
            return values;
        }

        public void write(MsgWriter out, List<Integer> v) {
            out.arrayHeader(v.size());
            v.forEach(out::i64);
        }
    };

    /** {@code dict[str, str]}. */
    static final FieldCodec<Map<String, String>> STR_MAP = new FieldCodec<>() {
        public Map<String, String> read(MsgReader in, String what) throws MalformedMessageException {
            int n = in.mapHeader(what);
            Map<String, String> map = new LinkedHashMap<>();
            for (int i = 0; i < n; i++) {
                String k = in.str(what + " key");
                if (map.put(k, in.str(what + "[" + k + "]")) != null) {
                    throw new MalformedMessageException(what + ": duplicate key \"" + k + "\"");
                }
            }
            return map;
        }

        public void write(MsgWriter out, Map<String, String> v) {
            out.mapHeader(v.size());
            v.forEach((k, x) -> out.str(k).str(x));
        }
    };

    /** {@code dict[int, int]}. */
    static final FieldCodec<Map<Integer, Integer>> INT_MAP = new FieldCodec<>() {
        public Map<Integer, Integer> read(MsgReader in, String what) throws MalformedMessageException {
            int n = in.mapHeader(what);
            Map<Integer, Integer> map = new LinkedHashMap<>();
            for (int i = 0; i < n; i++) {
                int k = in.i32(what + " key");
                if (map.put(k, in.i32(what + "[" + k + "]")) != null) {
                    throw new MalformedMessageException(what + ": duplicate key " + k);
                }
            }
            return map;
        }

        public void write(MsgWriter out, Map<Integer, Integer> v) {
            out.mapHeader(v.size());
            v.forEach((k, x) -> out.i64(k).i64(x));
        }
    };

    /** {@code Tuple[str, str]}: an array of exactly two strings. */
    static final FieldCodec<Position> POSITION = new FieldCodec<>() {
        public Position read(MsgReader in, String what) throws MalformedMessageException {
            tuple(in, what, 2);
            return new Position(in.str(what + "[0]"), in.str(what + "[1]"));
        }

        public void write(MsgWriter out, Position v) {
            out.arrayHeader(2).str(v.target()).str(v.location());
        }
    };

    /** {@code Dict[str, Tuple[str, int]]}. */
    static final FieldCodec<Map<String, OrchRetMsg.Layout>> LAYOUTS = new FieldCodec<>() {
        public Map<String, OrchRetMsg.Layout> read(MsgReader in, String what) throws MalformedMessageException {
            int n = in.mapHeader(what);
            Map<String, OrchRetMsg.Layout> map = new LinkedHashMap<>();
            for (int i = 0; i < n; i++) {
                String k = in.str(what + " key");
                tuple(in, what + "[" + k + "]", 2);
                OrchRetMsg.Layout layout = new OrchRetMsg.Layout(in.str(what + "[" + k + "][0]"),
                        in.i64(what + "[" + k + "][1]"));
                if (map.put(k, layout) != null) {
                    throw new MalformedMessageException(what + ": duplicate key \"" + k + "\"");
                }
            }
            return map;
        }

        public void write(MsgWriter out, Map<String, OrchRetMsg.Layout> v) {
            out.mapHeader(v.size());
            v.forEach((k, l) -> out.str(k).arrayHeader(2).str(l.location()).i64(l.endToken()));
        }
    };

    /** {@code list[tuple[str, str, int, str]]}. */
    static final FieldCodec<List<WorkerReqRetMsg.P2PHolder>> P2P_HOLDERS = new FieldCodec<>() {
        public List<WorkerReqRetMsg.P2PHolder> read(MsgReader in, String what) throws MalformedMessageException {
            int n = in.arrayHeader(what);
            List<WorkerReqRetMsg.P2PHolder> holders = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                String at = what + "[" + i + "]";
                tuple(in, at, 4);
                holders.add(new WorkerReqRetMsg.P2PHolder(in.str(at + "[0]"), in.str(at + "[1]"), in.i64(at + "[2]"),
                        in.str(at + "[3]")));
            }
            return holders;
        }

        public void write(MsgWriter out, List<WorkerReqRetMsg.P2PHolder> v) {
            out.arrayHeader(v.size());
            for (WorkerReqRetMsg.P2PHolder h : v) {
                out.arrayHeader(4).str(h.instanceId()).str(h.location()).i64(h.numHitChunks()).str(h.peerInitUrl());
            }
        }
    };

    private static final byte[][] KV_OP_NAMES = {
        "op_type".getBytes(StandardCharsets.UTF_8),
        "key".getBytes(StandardCharsets.UTF_8),
        "seq_num".getBytes(StandardCharsets.UTF_8),
    };

    /**
     * {@code list[KVOpEvent]}: read without the generic struct machinery because batches carry
     * thousands of them (no boxing per operation).
     */
    static final FieldCodec<List<KVOpEvent>> KV_OPS = new FieldCodec<>() {
        public List<KVOpEvent> read(MsgReader in, String what) throws MalformedMessageException {
            int n = in.arrayHeader(what);
            List<KVOpEvent> ops = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                ops.add(readOp(in, what));
            }
            return ops;
        }

        public void write(MsgWriter out, List<KVOpEvent> v) {
            out.arrayHeader(v.size());
            for (KVOpEvent op : v) {
                out.mapHeader(3).str("op_type").str(op.opType().wireValue()).str("key").key64(op.key())
                        .str("seq_num").i64(op.seqNum());
            }
        }
    };

    private static KVOpEvent readOp(MsgReader in, String what) throws MalformedMessageException {
        int entries = in.mapHeader(what);
        OpType type = null;
        long key = 0;
        long seq = 0;
        int seen = 0;
        for (int e = 0; e < entries; e++) {
            int i = in.key(KV_OP_NAMES, what + " KVOpEvent field name");
            if (i < 0) {
                in.skip(what + " KVOpEvent unknown field");
                continue;
            }
            if ((seen & (1 << i)) != 0) {
                throw new MalformedMessageException(what + ": KVOpEvent field appears twice");
            }
            seen |= 1 << i;
            switch (i) {
                case 0 -> type = opType(in.str(what + ".op_type"), what);
                case 1 -> key = in.key64(what + ".key");
                default -> seq = in.i64(what + ".seq_num");
            }
        }
        if (seen != 0b111) {
            throw new MalformedMessageException(what + ": KVOpEvent needs op_type, key and seq_num");
        }
        return new KVOpEvent(type, key, seq);
    }

    private static OpType opType(String value, String what) throws MalformedMessageException {
        for (OpType t : OpType.values()) {
            if (t.wireValue().equals(value)) {
                return t;
            }
        }
        throw new MalformedMessageException(what + ".op_type: \"" + value + "\" is neither \"admit\" nor \"evict\"");
    }

    /** Free-form {@code Dict[str, Any]}. */
    static final FieldCodec<Map<String, Object>> ANY_MAP = new FieldCodec<>() {
        @SuppressWarnings("unchecked")
        public Map<String, Object> read(MsgReader in, String what) throws MalformedMessageException {
            if (!in.peekIsMap(what)) {
                throw new MalformedMessageException(what + " must be a map");
            }
            return (Map<String, Object>) in.any(what, 0);
        }

        public void write(MsgWriter out, Map<String, Object> v) {
            writeAny(out, v);
        }
    };

    static void writeAny(MsgWriter out, Object v) {
        switch (v) {
            case null -> out.nil();
            case Boolean b -> out.bool(b);
            case Long l -> out.i64(l);
            case Integer i -> out.i64(i);
            case Double d -> out.f64(d);
            case String s -> out.str(s);
            case byte[] b -> out.bin(b);
            case List<?> list -> {
                out.arrayHeader(list.size());
                list.forEach(x -> writeAny(out, x));
            }
            case Map<?, ?> map -> {
                out.mapHeader(map.size());
                map.forEach((k, x) -> {
                    out.str(String.valueOf(k));
                    writeAny(out, x);
                });
            }
            default -> throw new IllegalArgumentException("cannot encode a " + v.getClass().getName()
                    + " in a controller message (use String, Long, Double, Boolean, byte[], List or Map)");
        }
    }

    static void tuple(MsgReader in, String what, int size) throws MalformedMessageException {
        int n = in.arrayHeader(what);
        if (n != size) {
            throw new MalformedMessageException(what + ": expected a tuple of " + size + ", found " + n + " elements");
        }
    }

    /** A list of structs of one schema. */
    static <T> FieldCodec<List<T>> listOf(StructSchema<T> schema) {
        return new FieldCodec<>() {
            public List<T> read(MsgReader in, String what) throws MalformedMessageException {
                int n = in.arrayHeader(what);
                List<T> list = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    list.add(schema.readFields(in, in.mapHeader(what + "[" + i + "]")));
                }
                return list;
            }

            public void write(MsgWriter out, List<T> v) {
                out.arrayHeader(v.size());
                v.forEach(x -> schema.write(out, x));
            }
        };
    }
}
