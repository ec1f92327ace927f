package lmcache4j.engine.controller.message;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * A streaming decoder for the two frames that carry almost every key a controller ingests,
 * {@code BatchedKVOperationMsg} and {@code FullSyncBatchMsg}: it walks the msgpack bytes directly
 * into primitive arrays reused from frame to frame, building no record per operation.
 *
 * <p>It accepts exactly what {@link ControllerCodec#decode} accepts, with the same values, or
 * declines: {@link #decode} returns {@link Kind#OTHER} for any other type and for any frame it does
 * not take whole (malformed, duplicate or missing fields, non-ASCII strings, odd nesting in an
 * unknown field...), and the caller then hands the frame to {@code ControllerCodec.decode}, which
 * accepts or refuses it as always. The checks that make the codec strict hold here too: the tag
 * must be the first entry, every length is bounded by the frame, integers are range checked as
 * the codec's are, unknown fields are skipped, and trailing bytes make it decline.
 *
 * <p>Not thread safe: one per ingestion thread; the arrays and strings it exposes are valid until
 * the next {@link #decode}.
 */
public final class KVBatchDecoder {
    /** What {@link #decode} found. */
    public enum Kind {
        /** A {@code BatchedKVOperationMsg}: {@link #instanceId()}, {@link #workerId()}, {@link #location()}, ops. */
        BATCHED_KV_OPERATIONS,
        /** A {@code FullSyncBatchMsg}: the same plus {@link #syncId()}, {@link #batchId()} and keys. */
        FULL_SYNC_BATCH,
        /** Anything else, or a frame this decoder does not take: decode it with {@link ControllerCodec}. */
        OTHER
    }

    /** {@link #opTypes()} value of an {@code "admit"}. */
    public static final byte ADMIT = 0;
    /** {@link #opTypes()} value of an {@code "evict"}. */
    public static final byte EVICT = 1;

    /** Values (nested ones included) skipped in one unknown field before the decoder declines (the codec goes on). */
    private static final int MAX_SKIP_VALUES = 1 << 16;

    private static final byte[] TYPE = ascii("type");
    private static final byte[] BATCHED = ascii("BatchedKVOperationMsg");
    private static final byte[] FULL_SYNC = ascii("FullSyncBatchMsg");
    private static final byte[] INSTANCE_ID = ascii("instance_id");
    private static final byte[] WORKER_ID = ascii("worker_id");
    private static final byte[] LOCATION = ascii("location");
    private static final byte[] OPERATIONS = ascii("operations");
    private static final byte[] SYNC_ID = ascii("sync_id");
    private static final byte[] BATCH_ID = ascii("batch_id");
    private static final byte[] KEYS = ascii("keys");
    private static final byte[] OP_TYPE = ascii("op_type");
    private static final byte[] KEY = ascii("key");
    private static final byte[] SEQ_NUM = ascii("seq_num");
    private static final byte[] ADMIT_VALUE = ascii("admit");
    private static final byte[] EVICT_VALUE = ascii("evict");
    /** Each message's fields, in the order its switch reads them. */
    private static final byte[][] BATCHED_FIELDS = {INSTANCE_ID, WORKER_ID, LOCATION, OPERATIONS};
    private static final byte[][] FULL_SYNC_FIELDS = {INSTANCE_ID, WORKER_ID, LOCATION, SYNC_ID, BATCH_ID, KEYS};
    private static final byte[][] OP_FIELDS = {OP_TYPE, KEY, SEQ_NUM};

    /** Thrown internally when the frame is not one this decoder takes; never escapes. */
    private static final class Decline extends Exception {
        private static final Decline INSTANCE = new Decline();

        private Decline() {
            super(null, null, false, false);
        }
    }

    private byte[] buf;
    private int pos;
    private int end;

    // The last string of each field: workers repeat them frame after frame, so reuse the String
    // (and its cached hash) instead of building one per frame.
    private final StringSlot instanceId = new StringSlot();
    private final StringSlot location = new StringSlot();
    private final StringSlot syncId = new StringSlot();
    private int workerId;
    private long batchId;
    private int count;
    private byte[] opTypes = new byte[64];
    private long[] keys = new long[64];
    private long[] seqNums = new long[64];

    /**
     * Decodes {@code frame} if it is a {@code BatchedKVOperationMsg} or {@code FullSyncBatchMsg}
     * that {@link ControllerCodec#decode} would accept; otherwise returns {@link Kind#OTHER} and
     * the caller decodes it with the codec.
     */
    public Kind decode(byte[] frame) {
        buf = frame;
        pos = 0;
        end = frame.length;
        try {
            int entries = mapHeader();
            if (entries == 0 || !nextKeyIs(TYPE)) {
                return Kind.OTHER;
            }
            Kind kind;
            int len = strHeader();
            if (equalsAt(BATCHED, len)) {
                kind = Kind.BATCHED_KV_OPERATIONS;
            } else if (equalsAt(FULL_SYNC, len)) {
                kind = Kind.FULL_SYNC_BATCH;
            } else {
                return Kind.OTHER;
            }
            pos += len;
            boolean ok = kind == Kind.BATCHED_KV_OPERATIONS ? batchedFields(entries - 1) : fullSyncFields(entries - 1);
            return ok && pos == end ? kind : Kind.OTHER;
        } catch (Decline | ArrayIndexOutOfBoundsException e) {
            return Kind.OTHER; // an index past the frame is a truncated frame: the codec says so
        } finally {
            buf = null;
        }
    }

    /** The last frame's {@code instance_id}. */
    public String instanceId() {
        return instanceId.value;
    }

    /** The last frame's {@code worker_id}. */
    public int workerId() {
        return workerId;
    }

    /** The last frame's {@code location}. */
    public String location() {
        return location.value;
    }

    /** The last {@code FullSyncBatchMsg}'s {@code sync_id}. */
    public String syncId() {
        return syncId.value;
    }

    /** The last {@code FullSyncBatchMsg}'s {@code batch_id}. */
    public long batchId() {
        return batchId;
    }

    /** Operations (or full-sync keys) in the last frame: the first {@code count()} slots of the arrays. */
    public int count() {
        return count;
    }

    /** {@link #ADMIT} or {@link #EVICT} per operation (a {@code BatchedKVOperationMsg}). */
    public byte[] opTypes() {
        return opTypes;
    }

    /** The keys, as 64-bit patterns, as the codec reads them. */
    public long[] keys() {
        return keys;
    }

    /** The operations' {@code seq_num}s (a {@code BatchedKVOperationMsg}). */
    public long[] seqNums() {
        return seqNums;
    }

    private boolean batchedFields(int entries) throws Decline {
        int seen = 0;
        for (int e = 0; e < entries; e++) {
            int field = nextField(BATCHED_FIELDS, seen);
            if (field < 0) {
                continue;
            }
            seen |= 1 << field;
            switch (field) {
                case 0 -> instanceId.read(this);
                case 1 -> workerId = i32();
                case 2 -> location.read(this);
                default -> operations();
            }
        }
        return seen == allOf(BATCHED_FIELDS);
    }

    private boolean fullSyncFields(int entries) throws Decline {
        int seen = 0;
        for (int e = 0; e < entries; e++) {
            int field = nextField(FULL_SYNC_FIELDS, seen);
            if (field < 0) {
                continue;
            }
            seen |= 1 << field;
            switch (field) {
                case 0 -> instanceId.read(this);
                case 1 -> workerId = i32();
                case 2 -> location.read(this);
                case 3 -> syncId.read(this);
                case 4 -> batchId = integer(true);
                default -> keyList();
            }
        }
        return seen == allOf(FULL_SYNC_FIELDS);
    }

    private void operations() throws Decline {
        int n = arrayHeader();
        ensure(n);
        for (int i = 0; i < n; i++) {
            int entries = mapHeader();
            int seen = 0;
            for (int e = 0; e < entries; e++) {
                int field = nextField(OP_FIELDS, seen);
                if (field < 0) {
                    continue;
                }
                seen |= 1 << field;
                switch (field) {
                    case 0 -> {
                        int vlen = strHeader();
                        if (equalsAt(ADMIT_VALUE, vlen)) {
                            opTypes[i] = ADMIT;
                        } else if (equalsAt(EVICT_VALUE, vlen)) {
                            opTypes[i] = EVICT;
                        } else {
                            throw Decline.INSTANCE;
                        }
                        pos += vlen;
                    }
                    case 1 -> keys[i] = integer(false);
                    default -> seqNums[i] = integer(true);
                }
            }
            if (seen != allOf(OP_FIELDS)) {
                throw Decline.INSTANCE;
            }
        }
        count = n;
    }

    /**
     * The next field name of a map: its index in {@code names}, with {@code pos} at its value. An
     * unknown field's value is skipped (-1, as the codec ignores unknown fields); a field already in
     * {@code seen} declines (a duplicate, which the codec refuses).
     */
    private int nextField(byte[][] names, int seen) throws Decline {
        int len = strHeader();
        for (int f = 0; f < names.length; f++) {
            if (equalsAt(names[f], len)) {
                pos += len;
                if ((seen & (1 << f)) != 0) {
                    throw Decline.INSTANCE;
                }
                return f;
            }
        }
        pos += len;
        skipValue();
        return -1;
    }

    private static int allOf(byte[][] names) {
        return (1 << names.length) - 1;
    }

    private void keyList() throws Decline {
        int n = arrayHeader();
        ensure(n);
        for (int i = 0; i < n; i++) {
            keys[i] = integer(false);
        }
        count = n;
    }

    private void ensure(int n) {
        if (keys.length < n) {
            int size = Math.max(n, keys.length * 2);
            opTypes = new byte[size];
            keys = new long[size];
            seqNums = new long[size];
        }
    }

    // ---- msgpack primitives; each bounds its lengths by the bytes the frame has left ----

    private int u8() {
        return buf[pos++] & 0xff;
    }

    private int u16() {
        int v = ((buf[pos] & 0xff) << 8) | (buf[pos + 1] & 0xff);
        pos += 2;
        return v;
    }

    private long u32() {
        long v = ((long) (buf[pos] & 0xff) << 24) | ((buf[pos + 1] & 0xff) << 16) | ((buf[pos + 2] & 0xff) << 8)
                | (buf[pos + 3] & 0xff);
        pos += 4;
        return v;
    }

    private long u64() {
        long v = 0;
        for (int i = 0; i < 8; i++) {
            v = (v << 8) | (buf[pos + i] & 0xff);
        }
        pos += 8;
        return v;
    }

    /** A length that must fit in what is left of the frame, with {@code unit} bytes per item at least. */
    private int bounded(long n, int unit) throws Decline {
        if (n * unit > end - pos) {
            throw Decline.INSTANCE;
        }
        return (int) n;
    }

    private int mapHeader() throws Decline {
        return containerHeader(0x80, 0xde, 0xdf, 2);
    }

    private int arrayHeader() throws Decline {
        return containerHeader(0x90, 0xdc, 0xdd, 1);
    }

    /**
     * A fixmap/fixarray ({@code fixPrefix}), 16-bit or 32-bit map or array header: its element
     * count, at least {@code bytesPerItem} bytes each within what is left of the frame.
     */
    private int containerHeader(int fixPrefix, int marker16, int marker32, int bytesPerItem) throws Decline {
        int b = u8();
        long n;
        if ((b & 0xf0) == fixPrefix) {
            n = b & 0x0f;
        } else if (b == marker16) {
            n = u16();
        } else if (b == marker32) {
            n = u32();
        } else {
            throw Decline.INSTANCE;
        }
        return bounded(n, bytesPerItem);
    }

    /** A string header: its byte length (the payload starts at {@code pos}). */
    private int strHeader() throws Decline {
        int b = u8();
        long n;
        if ((b & 0xe0) == 0xa0) {
            n = b & 0x1f;
        } else if (b == 0xd9) {
            n = u8();
        } else if (b == 0xda) {
            n = u16();
        } else if (b == 0xdb) {
            n = u32();
        } else {
            throw Decline.INSTANCE;
        }
        return bounded(n, 1);
    }

    private boolean equalsAt(byte[] name, int len) {
        return len == name.length && Arrays.equals(buf, pos, pos + len, name, 0, len);
    }

    private boolean nextKeyIs(byte[] name) throws Decline {
        int len = strHeader();
        boolean is = equalsAt(name, len);
        pos += len;
        return is;
    }

    /**
     * An integer as the codec reads it: any msgpack integer, a uint64 kept as its bit pattern;
     * {@code signed} declines uint64 values of 2^63 and above (which the codec refuses).
     */
    private long integer(boolean signed) throws Decline {
        int b = u8();
        if (b <= 0x7f) {
            return b;
        }
        if (b >= 0xe0) {
            return (byte) b;
        }
        return switch (b) {
            case 0xcc -> u8();
            case 0xcd -> u16();
            case 0xce -> u32();
            case 0xcf -> {
                long v = u64();
                if (signed && v < 0) {
                    throw Decline.INSTANCE;
                }
                yield v;
            }
            case 0xd0 -> (byte) u8();
            case 0xd1 -> (short) u16();
            case 0xd2 -> (int) u32();
            case 0xd3 -> u64();
            default -> throw Decline.INSTANCE;
        };
    }

    private int i32() throws Decline {
        long v = integer(true);
        if (v != (int) v) {
            throw Decline.INSTANCE;
        }
        return (int) v;
    }

    /** Skips one value of any msgpack type (an unknown field), every length bounded by the frame. */
    private void skipValue() throws Decline {
        long pending = 1; // values still to skip, nested ones included
        int budget = MAX_SKIP_VALUES;
        while (pending > 0) {
            if (--budget < 0) {
                throw Decline.INSTANCE; // a huge nest: leave it to the codec
            }
            pending--;
            int b = u8();
            if (b <= 0x7f || b >= 0xe0 || b == 0xc0 || b == 0xc2 || b == 0xc3) {
                continue; // fixint, nil, booleans
            }
            switch (b & 0xf0) {
                case 0x80 -> {
                    pending += 2L * bounded(b & 0x0f, 2);
                    continue;
                }
                case 0x90 -> {
                    pending += bounded(b & 0x0f, 1);
                    continue;
                }
                case 0xa0, 0xb0 -> {
                    pos += bounded(b & 0x1f, 1);
                    continue;
                }
                default -> {
                }
            }
            // A length is read before pos is advanced past it: `pos += f()` would lose f's own advance.
            long skip = switch (b) {
                case 0xcc, 0xd0 -> 1;
                case 0xcd, 0xd1 -> 2;
                case 0xce, 0xd2, 0xca -> 4;
                case 0xcf, 0xd3, 0xcb -> 8;
                case 0xd9, 0xc4 -> u8();
                case 0xda, 0xc5 -> u16();
                case 0xdb, 0xc6 -> u32();
                case 0xd4 -> 2; // fixext 1: its type byte and one byte
                case 0xd5 -> 3;
                case 0xd6 -> 5;
                case 0xd7 -> 9;
                case 0xd8 -> 17;
                case 0xc7 -> u8() + 1L; // ext 8/16/32: the length, then the type byte and the data
                case 0xc8 -> u16() + 1L;
                case 0xc9 -> u32() + 1L;
                case 0xdc -> {
                    long n = u16();
                    pending += bounded(n, 1);
                    yield 0;
                }
                case 0xdd -> {
                    long n = u32();
                    pending += bounded(n, 1);
                    yield 0;
                }
                case 0xde -> {
                    long n = u16();
                    pending += 2L * bounded(n, 2);
                    yield 0;
                }
                case 0xdf -> {
                    long n = u32();
                    pending += 2L * bounded(n, 2);
                    yield 0;
                }
                default -> throw Decline.INSTANCE; // 0xc1, never used
            };
            int n = bounded(skip, 1);
            pos += n;
        }
    }

    private static byte[] ascii(String s) {
        return s.getBytes(StandardCharsets.US_ASCII);
    }

    /**
     * The last few values of one string field, kept with their bytes so that a repeated one (a
     * worker's instance id, its location) is reused rather than built again for every frame.
     */
    private static final class StringSlot {
        private static final int WAYS = 8;
        private final byte[][] bytes = new byte[WAYS][];
        private final String[] strings = new String[WAYS];
        private int next;
        String value;

        /** Reads a string; declines non-ASCII ones (the codec validates UTF-8 for those). */
        void read(KVBatchDecoder in) throws Decline {
            int len = in.strHeader();
            byte[] b = in.buf;
            int at = in.pos;
            in.pos += len;
            for (int i = 0; i < WAYS; i++) {
                byte[] cached = bytes[i];
                if (cached != null && cached.length == len && Arrays.equals(b, at, at + len, cached, 0, len)) {
                    value = strings[i];
                    return;
                }
            }
            for (int i = at; i < at + len; i++) {
                if (b[i] < 0) {
                    throw Decline.INSTANCE;
                }
            }
            int slot = next;
            next = (next + 1) % WAYS;
            bytes[slot] = Arrays.copyOfRange(b, at, at + len);
            strings[slot] = new String(bytes[slot], StandardCharsets.US_ASCII);
            value = strings[slot];
        }
    }
}
