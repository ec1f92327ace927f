package lmcache4j.server.mp.wire;

import java.util.OptionalInt;

/**
 * Reads and writes {@link IpcCacheServerKey} as msgspec does (docs/design/mp-server.md §4.1): a
 * map keyed by field name. Decoding takes the keys in any order, ignores unknown ones
 * ({@code request_configs}, {@code null_chunk_mask} and whatever later versions add), fills
 * defaults and enforces LMCache's invariants; encoding writes every field of the chosen
 * {@link MpSchema} in LMCache's declaration order, so the bytes equal msgspec's.
 */
public final class MpKeyCodec {
    /** The default cap on {@code token_ids}: 4 Mi tokens, far above any context window. */
    public static final int DEFAULT_MAX_TOKENS = 1 << 22;
    /** The longest {@code model_name} or {@code request_id} accepted, in UTF-8 bytes. */
    public static final int MAX_STRING_BYTES = 4096;

    private static final long UINT32_MAX = 0xFFFF_FFFFL;

    private MpKeyCodec() {
    }

    /**
     * Decodes one key frame.
     *
     * @param maxTokens the most token ids accepted (see {@link #DEFAULT_MAX_TOKENS})
     * @throws MpProtocolException {@link MpDropReason#BAD_ARGUMENT} for malformed msgpack, a wrong
     *     type, a missing required field, a token id outside {@code [0, 2^32)}, too many tokens, or
     *     a broken invariant (salt, model name, world size, worker id, range)
     */
    public static IpcCacheServerKey decode(byte[] frame, int maxTokens) throws MpProtocolException {
        try (MpReader in = MpReader.of(frame)) {
            IpcCacheServerKey key = read(in, maxTokens);
            in.expectEnd("IPCCacheServerKey");
            return key;
        }
    }

    static IpcCacheServerKey read(MpReader in, int maxTokens) throws MpProtocolException {
        String modelName = null;
        Integer worldSize = null;
        OptionalInt workerId = null;
        int[] tokens = null;
        Integer start = null;
        Integer end = null;
        String requestId = null;
        String cacheSalt = "";
        int numKvReaders = 0;
        int entries = in.readMapHeader("IPCCacheServerKey");
        for (int i = 0; i < entries; i++) {
            String field = in.readString("IPCCacheServerKey field name", MAX_STRING_BYTES);
            switch (field) {
                case "model_name" -> modelName = in.readString("model_name", MAX_STRING_BYTES);
                case "world_size" -> worldSize = (int) in.readLong("world_size", 1, IpcCacheServerKey.MAX_WORLD_SIZE);
                case "worker_id" -> workerId = in.tryNil("worker_id") ? OptionalInt.empty()
                        : OptionalInt.of((int) in.readLong("worker_id", 0, IpcCacheServerKey.MAX_WORLD_SIZE - 1));
                case "token_ids" -> tokens = readTokens(in, maxTokens);
                case "start" -> start = (int) in.readLong("start", 0, Integer.MAX_VALUE);
                case "end" -> end = (int) in.readLong("end", 0, Integer.MAX_VALUE);
                case "request_id" -> requestId = in.readString("request_id", MAX_STRING_BYTES);
                case "cache_salt" -> cacheSalt = in.readString("cache_salt", 4 * IpcCacheServerKey.MAX_SALT_CHARS);
                case "num_kv_readers" -> numKvReaders = (int) in.readLong("num_kv_readers", 0, Integer.MAX_VALUE);
                default -> in.skipValue("IPCCacheServerKey." + field);
            }
        }
        try {
            return new IpcCacheServerKey(required(modelName, "model_name"), required(worldSize, "world_size"),
                    required(workerId, "worker_id"), required(tokens, "token_ids"), required(start, "start"),
                    required(end, "end"), required(requestId, "request_id"), cacheSalt, numKvReaders);
        } catch (IllegalArgumentException e) {
            throw new MpProtocolException(MpDropReason.BAD_ARGUMENT, "IPCCacheServerKey: " + e.getMessage(), e);
        }
    }

    private static int[] readTokens(MpReader in, int maxTokens) throws MpProtocolException {
        int count = in.readArrayHeader("token_ids", maxTokens);
        int[] tokens = new int[count];
        for (int i = 0; i < count; i++) {
            tokens[i] = (int) in.readLong("token_ids[" + i + "]", 0, UINT32_MAX);
        }
        return tokens;
    }

    private static <T> T required(T value, String field) throws MpProtocolException {
        if (value == null) {
            throw MpReader.bad("IPCCacheServerKey: missing required field '" + field + "'");
        }
        return value;
    }

    /** Encodes a key with every field of {@code schema}, in LMCache's order (byte-exact with msgspec). */
    public static byte[] encode(IpcCacheServerKey key, MpSchema schema) {
        MpWriter out = new MpWriter();
        write(out, key, schema);
        return out.toByteArray();
    }

    static void write(MpWriter out, IpcCacheServerKey key, MpSchema schema) {
        out.mapHeader(schema == MpSchema.BASE ? 8 : 11);
        out.key("model_name").string(key.modelName());
        out.key("world_size").integer(key.worldSize());
        out.key("worker_id");
        if (key.workerId().isPresent()) {
            out.integer(key.workerId().getAsInt());
        } else {
            out.nil();
        }
        int[] tokens = key.tokenIds();
        out.key("token_ids").arrayHeader(tokens.length);
        for (int token : tokens) {
            out.unsigned32(token);
        }
        out.key("start").integer(key.start());
        out.key("end").integer(key.end());
        out.key("request_id").string(key.requestId());
        out.key("cache_salt").string(key.cacheSalt());
        if (schema == MpSchema.EXTENDED) {
            out.key("request_configs").nil();
            out.key("num_kv_readers").integer(key.numKvReaders());
            out.key("null_chunk_mask").nil();
        }
    }
}
