package lmcache4j.engine.controller.message;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

import org.junit.jupiter.api.Test;
import org.msgpack.core.MessageBufferPacker;
import org.msgpack.core.MessagePack;

/**
 * The streaming decoder against the codec it stands in for: on every golden vector, on random
 * valid {@code BatchedKVOperationMsg}/{@code FullSyncBatchMsg} frames written in every msgpack form
 * the spec allows (field order, integer widths, str8/16/32 and map16/array16 headers, unknown
 * fields), and on those frames mutated, whenever the fast path takes a frame the codec accepts it
 * too, with the same values; and it takes every plain valid one. Seeded; {@code -Dlmcache4j.fuzz.seed}.
 */
class KVBatchDecoderTest {
    private static final HexFormat HEX = HexFormat.of();

    private final KVBatchDecoder fast = new KVBatchDecoder();

    @Test
    void goldenVectorsDecodeAlikeAndBothBatchTypesTakeTheFastPath() throws IOException {
        int taken = 0;
        for (Map<String, Object> v : GoldenControllerMessagesTest.vectors()) {
            byte[] wire = HEX.parseHex((String) v.get("hex"));
            KVBatchDecoder.Kind kind = agree(wire, "golden " + v.get("name"));
            String type = (String) v.get("type");
            if (type.equals("BatchedKVOperationMsg") || type.equals("FullSyncBatchMsg")) {
                assertTrue(kind != KVBatchDecoder.Kind.OTHER, v.get("name") + " takes the fast path");
                taken++;
            } else {
                assertEquals(KVBatchDecoder.Kind.OTHER, kind, v.get("name") + " is left to the codec");
            }
        }
        assertTrue(taken >= 2, "golden vectors of both types exist");
    }

    @Test
    void randomValidAndMutatedFramesDecodeAlike() throws IOException {
        long seed = Long.getLong("lmcache4j.fuzz.seed", System.nanoTime());
        SplittableRandom r = new SplittableRandom(seed);
        List<byte[]> seeds = new ArrayList<>();
        for (Map<String, Object> v : GoldenControllerMessagesTest.vectors()) {
            seeds.add(HEX.parseHex((String) v.get("hex")));
        }
        int fastValid = 0;
        int fastMutated = 0;
        int refused = 0;
        for (int i = 0; i < 20_000; i++) {
            boolean plain = r.nextInt(4) != 0; // plain: ASCII strings, no nesting in unknown fields
            byte[] frame = r.nextBoolean() ? batched(r, plain) : fullSync(r, plain);
            String where = "seed " + seed + ", frame " + i;
            KVBatchDecoder.Kind kind = agree(frame, where);
            if (plain) {
                assertTrue(kind != KVBatchDecoder.Kind.OTHER, where + ": a plain valid frame takes the fast path: "
                        + HEX.formatHex(frame));
                fastValid++;
            }
            byte[] mutated = ControllerCodecFuzzTest.mangle(r.nextInt(3) == 0 ? seeds.get(r.nextInt(seeds.size())) : frame, r);
            if (agree(mutated, where + " mutated") != KVBatchDecoder.Kind.OTHER) {
                fastMutated++;
            }
            try {
                ControllerCodec.decode(mutated);
            } catch (MalformedMessageException e) {
                refused++;
            }
        }
        System.out.printf("KVBatchDecoder vs codec (seed %d): %d valid on the fast path, %d mutated on it, %d refused%n",
                seed, fastValid, fastMutated, refused);
        assertTrue(refused > 0 && fastMutated > 0, "the mutations reach both outcomes");
    }

    @Test
    void truncatedFramesAndTrailingBytesAreLeftToTheCodec() throws IOException {
        SplittableRandom r = new SplittableRandom(7);
        byte[] frame = batched(r, true);
        for (int n = 0; n < frame.length; n++) {
            assertEquals(KVBatchDecoder.Kind.OTHER, agree(Arrays.copyOf(frame, n), "truncated at " + n));
        }
        assertEquals(KVBatchDecoder.Kind.OTHER, agree(Arrays.copyOf(frame, frame.length + 1), "a trailing byte"));
    }

    /** Decodes with both; fails unless they agree. Returns the fast path's answer. */
    private KVBatchDecoder.Kind agree(byte[] frame, String where) {
        ControllerMessage slow;
        try {
            slow = ControllerCodec.decode(frame);
        } catch (MalformedMessageException e) {
            slow = null;
        }
        KVBatchDecoder.Kind kind = fast.decode(frame);
        switch (kind) {
            case BATCHED_KV_OPERATIONS -> {
                if (!(slow instanceof WorkerMsg.BatchedKVOperationMsg b)) {
                    fail(where + ": fast path took a frame the codec made " + slow + ": " + HEX.formatHex(frame));
                    return kind;
                }
                assertEquals(b.instanceId(), fast.instanceId(), where);
                assertEquals(b.workerId(), fast.workerId(), where);
                assertEquals(b.location(), fast.location(), where);
                assertEquals(b.operations().size(), fast.count(), where);
                for (int i = 0; i < fast.count(); i++) {
                    KVOpEvent op = b.operations().get(i);
                    assertEquals(op.opType() == OpType.ADMIT ? KVBatchDecoder.ADMIT : KVBatchDecoder.EVICT,
                            fast.opTypes()[i], where);
                    assertEquals(op.key(), fast.keys()[i], where);
                    assertEquals(op.seqNum(), fast.seqNums()[i], where);
                }
            }
            case FULL_SYNC_BATCH -> {
                if (!(slow instanceof WorkerMsg.FullSyncBatchMsg f)) {
                    fail(where + ": fast path took a frame the codec made " + slow + ": " + HEX.formatHex(frame));
                    return kind;
                }
                assertEquals(f.instanceId(), fast.instanceId(), where);
                assertEquals(f.workerId(), fast.workerId(), where);
                assertEquals(f.location(), fast.location(), where);
                assertEquals(f.syncId(), fast.syncId(), where);
                assertEquals(f.batchId(), fast.batchId(), where);
                assertArrayEquals(f.keys(), Arrays.copyOf(fast.keys(), fast.count()), where);
            }
            case OTHER -> {
            }
        }
        return kind;
    }

    // ---- random frames, written with msgpack-core so every header form appears ----

    private static byte[] batched(SplittableRandom r, boolean plain) throws IOException {
        MessageBufferPacker p = MessagePack.newDefaultBufferPacker();
        IoField[] known = {
            () -> { str(p, r, "instance_id"); str(p, r, text(r, plain)); },
            () -> { str(p, r, "worker_id"); integer(p, r, r.nextInt(4) == 0 ? r.nextInt() : r.nextInt(8), true); },
            () -> { str(p, r, "location"); str(p, r, r.nextBoolean() ? "LocalCPUBackend" : text(r, plain)); },
            () -> {
                str(p, r, "operations");
                int n = r.nextInt(4) == 0 ? r.nextInt(20) : 64;
                arrayHeader(p, r, n);
                for (int i = 0; i < n; i++) {
                    op(p, r, plain);
                }
            },
        };
        return struct(p, r, "BatchedKVOperationMsg", known, plain);
    }

    private static byte[] fullSync(SplittableRandom r, boolean plain) throws IOException {
        MessageBufferPacker p = MessagePack.newDefaultBufferPacker();
        IoField[] known = {
            () -> { str(p, r, "instance_id"); str(p, r, text(r, plain)); },
            () -> { str(p, r, "worker_id"); integer(p, r, r.nextInt(1000), true); },
            () -> { str(p, r, "location"); str(p, r, text(r, plain)); },
            () -> { str(p, r, "sync_id"); str(p, r, text(r, plain)); },
            () -> { str(p, r, "batch_id"); integer(p, r, r.nextBoolean() ? r.nextInt(100) : r.nextLong() >>> 1, true); },
            () -> {
                str(p, r, "keys");
                int n = r.nextInt(200);
                arrayHeader(p, r, n);
                for (int i = 0; i < n; i++) {
                    integer(p, r, r.nextLong(), false);
                }
            },
        };
        return struct(p, r, "FullSyncBatchMsg", known, plain);
    }

    /** One field written to the packer (a lambda that may throw). */
    private interface IoField {
        void write() throws IOException;
    }

    /** The tag first, then the fields in a random order with unknown fields between them. */
    private static byte[] struct(MessageBufferPacker p, SplittableRandom r, String tag, IoField[] known, boolean plain)
            throws IOException {
        List<IoField> entries = new ArrayList<>(Arrays.asList(known));
        for (int i = 0; i < 4; i++) {
            if (r.nextInt(3) == 0) {
                entries.add(() -> unknownField(p, r, plain));
            }
        }
        if (r.nextBoolean()) {
            java.util.Collections.shuffle(entries, new java.util.Random(r.nextLong()));
        }
        mapHeader(p, r, entries.size() + 1);
        str(p, r, "type");
        str(p, r, tag);
        for (IoField f : entries) {
            f.write();
        }
        p.close();
        return p.toByteArray();
    }

    private static void op(MessageBufferPacker p, SplittableRandom r, boolean plain) throws IOException {
        List<IoField> entries = new ArrayList<>(List.of(
                () -> { str(p, r, "op_type"); str(p, r, r.nextBoolean() ? "admit" : "evict"); },
                () -> { str(p, r, "key"); integer(p, r, r.nextLong(), false); },
                () -> { str(p, r, "seq_num"); integer(p, r, r.nextInt(3) == 0 ? -r.nextInt(1000) : r.nextLong() >>> 1, true); }));
        if (r.nextInt(16) == 0) {
            entries.add(() -> unknownField(p, r, plain));
        }
        if (r.nextInt(4) == 0) {
            java.util.Collections.shuffle(entries, new java.util.Random(r.nextLong()));
        }
        mapHeader(p, r, entries.size());
        for (IoField f : entries) {
            f.write();
        }
    }

    private static void unknownField(MessageBufferPacker p, SplittableRandom r, boolean plain) throws IOException {
        str(p, r, "extra_" + r.nextInt(1000));
        switch (r.nextInt(plain ? 6 : 8)) {
            case 0 -> p.packNil();
            case 1 -> p.packBoolean(r.nextBoolean());
            case 2 -> p.packDouble(r.nextDouble());
            case 3 -> p.packFloat((float) r.nextDouble());
            case 4 -> {
                byte[] b = new byte[r.nextInt(40)];
                r.nextBytes(b);
                p.packBinaryHeader(b.length).writePayload(b);
            }
            case 5 -> {
                byte[] b = new byte[r.nextInt(4) == 0 ? r.nextInt(300) : 1 << r.nextInt(5)];
                r.nextBytes(b);
                p.packExtensionTypeHeader((byte) 3, b.length).writePayload(b);
            }
            case 6 -> { // nested containers
                p.packArrayHeader(3).packInt(1).packString("x");
                p.packMapHeader(1).packString("k").packArrayHeader(2).packNil().packLong(r.nextLong());
            }
            default -> p.packString(text(r, false));
        }
    }

    private static String text(SplittableRandom r, boolean ascii) {
        int n = r.nextInt(4) == 0 ? r.nextInt(300) : 1 + r.nextInt(20);
        StringBuilder sb = new StringBuilder(n);
        for (int i = 0; i < n; i++) {
            sb.append(ascii || r.nextInt(8) != 0 ? (char) (' ' + r.nextInt(95)) : "é€😀".charAt(r.nextInt(2)));
        }
        return sb.toString();
    }

    /** A string, in the smallest header or (at random) a wider one than needed. */
    private static void str(MessageBufferPacker p, SplittableRandom r, String s) throws IOException {
        byte[] b = s.getBytes(java.nio.charset.StandardCharsets.UTF_8);
        switch (r.nextInt(8)) {
            case 0 -> {
                if (b.length <= 255) {
                    p.writePayload(new byte[] {(byte) 0xd9, (byte) b.length});
                } else {
                    p.packRawStringHeader(b.length);
                }
            }
            case 1 -> p.writePayload(new byte[] {(byte) 0xda, (byte) (b.length >>> 8), (byte) b.length});
            case 2 -> p.writePayload(new byte[] {(byte) 0xdb, 0, 0, (byte) (b.length >>> 8), (byte) b.length});
            default -> p.packRawStringHeader(b.length);
        }
        p.writePayload(b);
    }

    private static void mapHeader(MessageBufferPacker p, SplittableRandom r, int n) throws IOException {
        switch (r.nextInt(6)) {
            case 0 -> p.writePayload(new byte[] {(byte) 0xde, 0, (byte) n});
            case 1 -> p.writePayload(new byte[] {(byte) 0xdf, 0, 0, 0, (byte) n});
            default -> p.packMapHeader(n);
        }
    }

    private static void arrayHeader(MessageBufferPacker p, SplittableRandom r, int n) throws IOException {
        switch (r.nextInt(6)) {
            case 0 -> p.writePayload(new byte[] {(byte) 0xdc, (byte) (n >>> 8), (byte) n});
            case 1 -> p.writePayload(new byte[] {(byte) 0xdd, 0, 0, (byte) (n >>> 8), (byte) n});
            default -> p.packArrayHeader(n);
        }
    }

    /**
     * An integer in the smallest form, or a wider one (int64 for a small value), or, for an
     * unsigned key, uint64 above 2^63.
     */
    private static void integer(MessageBufferPacker p, SplittableRandom r, long v, boolean signed) throws IOException {
        if (!signed && v < 0 && r.nextBoolean()) {
            p.packBigInteger(new java.math.BigInteger(Long.toUnsignedString(v))); // uint64
            return;
        }
        if (r.nextInt(5) == 0) {
            byte[] b = new byte[9];
            b[0] = (byte) 0xd3;
            for (int i = 0; i < 8; i++) {
                b[1 + i] = (byte) (v >>> (56 - 8 * i));
            }
            p.writePayload(b);
            return;
        }
        p.packLong(v);
    }
}
