package lmcache4j.server.mp.wire;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.OptionalLong;
import java.util.Random;

import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;

import org.junit.jupiter.api.Test;

/**
 * Round trips of every codec, and hostile frames: whatever the bytes, a decoder returns a value
 * or throws {@link MpProtocolException}, never another exception, and never allocates more than
 * the frame's own size on a declared length.
 */
class MpCodecProperties {

    private static IpcCacheServerKey randomKey(Random r) {
        int[] tokens = new int[r.nextInt(600)];
        for (int i = 0; i < tokens.length; i++) {
            tokens[i] = r.nextInt(4) == 0 ? r.nextInt() : r.nextInt(200_000);
        }
        int world = 1 + r.nextInt(255);
        OptionalInt worker = r.nextBoolean() ? OptionalInt.empty() : OptionalInt.of(r.nextInt(world));
        StringBuilder salt = new StringBuilder();
        for (int i = r.nextInt(129); i > 0; i--) {
            salt.append("aZ9-_.Ωé".charAt(r.nextInt(8)));
        }
        return new IpcCacheServerKey("model-" + r.nextInt(), world, worker, tokens, r.nextInt(700), r.nextInt(700),
                "req-" + Long.toHexString(r.nextLong()), salt.toString(), r.nextInt(9));
    }

    @Property
    void keysSurviveBothSchemas(@ForAll long seed) throws Exception {
        IpcCacheServerKey key = randomKey(new Random(seed));
        assertEquals(key, MpKeyCodec.decode(MpKeyCodec.encode(key, MpSchema.EXTENDED), MpKeyCodec.DEFAULT_MAX_TOKENS));
        IpcCacheServerKey base = MpKeyCodec.decode(MpKeyCodec.encode(key, MpSchema.BASE), MpKeyCodec.DEFAULT_MAX_TOKENS);
        assertEquals(new IpcCacheServerKey(key.modelName(), key.worldSize(), key.workerId(), key.tokenIds(),
                key.start(), key.end(), key.requestId(), key.cacheSalt(), 0), base, "the base schema has no num_kv_readers");
    }

    @Property
    void payloadsAndResponsesSurvive(@ForAll long seed) throws Exception {
        Random r = new Random(seed);
        RegisterEngineDrivenContextPayload p = new RegisterEngineDrivenContextPayload(r.nextLong(), "m" + r.nextInt(),
                1 + r.nextInt(255), r.nextInt(1 << 20), r.nextInt(200), r.nextLong() & Long.MAX_VALUE,
                r.nextBoolean() ? "bfloat16" : "float8_e4m3fn", r.nextBoolean(),
                r.nextBoolean() ? OptionalLong.empty() : OptionalLong.of(r.nextInt(1 << 20)), List.of());
        assertEquals(p, MpRegistrationCodec.decodePayload(MpRegistrationCodec.encodePayload(p, MpSchema.EXTENDED)));
        RegisterEngineDrivenContextResponse resp = new RegisterEngineDrivenContextResponse("pool" + r.nextInt(),
                r.nextLong() & Long.MAX_VALUE, r.nextInt() & Integer.MAX_VALUE, r.nextInt() & Integer.MAX_VALUE,
                r.nextBoolean() ? Optional.empty() : Optional.of("no: " + r.nextInt()));
        assertEquals(resp, MpRegistrationCodec.decodeResponse(MpRegistrationCodec.encodeResponse(resp)));
        List<ShmSlot> slots = new ArrayList<>();
        List<Integer> indices = new ArrayList<>();
        for (int i = r.nextInt(20); i > 0; i--) {
            slots.add(new ShmSlot(r.nextLong() & Long.MAX_VALUE, r.nextInt() & Integer.MAX_VALUE,
                    List.of(2L, (long) r.nextInt(100), 256L, (long) r.nextInt(1 << 16)), "float16"));
            indices.add(r.nextInt(1 << 16));
        }
        PrepareStoreResponse store = new PrepareStoreResponse(TransferContext.store(slots, indices));
        assertEquals(store, MpTransferCodec.decodeStore(MpTransferCodec.encode(store)));
        PrepareRetrieveResponse retrieve = r.nextBoolean() ? PrepareRetrieveResponse.missing()
                : new PrepareRetrieveResponse(true, TransferContext.retrieve(slots));
        assertEquals(retrieve, MpTransferCodec.decodeRetrieve(MpTransferCodec.encode(retrieve)));
    }

    /** Runs every decoder on {@code frame}: each must return or throw MpProtocolException. */
    private static void decodeEverything(byte[] frame) {
        List<ThrowingDecoder> decoders = List.of(
                () -> MpKeyCodec.decode(frame, MpKeyCodec.DEFAULT_MAX_TOKENS),
                () -> MpRegistrationCodec.decodePayload(frame),
                () -> MpRegistrationCodec.decodeResponse(frame),
                () -> MpTransferCodec.decodeStore(frame),
                () -> MpTransferCodec.decodeRetrieve(frame),
                () -> MpOperation.decode(frame),
                () -> MpScalars.decodeInt(frame, "x", Long.MIN_VALUE, Long.MAX_VALUE),
                () -> MpScalars.decodeOptionalInt(frame, "x", 0, Long.MAX_VALUE),
                () -> MpScalars.decodeNumber(frame, "x"),
                () -> MpScalars.decodeString(frame, "x", 1 << 20),
                () -> MpScalars.decodeBool(frame, "x"),
                () -> MpScalars.decodeBytes(frame, "x", 1 << 20),
                () -> {
                    MpScalars.checkWellFormed(frame, "x");
                    return null;
                });
        for (ThrowingDecoder d : decoders) {
            try {
                d.run();
            } catch (MpProtocolException expected) {
                // the only failure allowed
            } catch (Exception | Error e) {
                throw new AssertionError("a hostile frame escaped as " + e, e);
            }
        }
    }

    @FunctionalInterface
    private interface ThrowingDecoder {
        Object run() throws MpProtocolException;
    }

    @Property
    void randomBytesOnlyEverGiveProtocolExceptions(@ForAll @Size(max = 64) byte[] frame) {
        decodeEverything(frame);
    }

    @Property
    void mutatedAndTruncatedValidFramesOnlyEverGiveProtocolExceptions(@ForAll long seed,
            @ForAll @IntRange(min = 0, max = 3) int kind) {
        Random r = new Random(seed);
        IpcCacheServerKey key = randomKey(r);
        byte[] valid = switch (kind) {
            case 0 -> MpKeyCodec.encode(key, MpSchema.EXTENDED);
            case 1 -> MpRegistrationCodec.encodePayload(RegisterEngineDrivenContextPayload.singleGroup(1, "m", 2, 16,
                    32, 1024, "float16", false), MpSchema.BASE);
            case 2 -> MpTransferCodec.encode(new PrepareRetrieveResponse(true, TransferContext.retrieve(List.of(
                    new ShmSlot(1, 2, List.of(3L), "float16")))));
            default -> MpKeyCodec.encode(key, MpSchema.BASE);
        };
        decodeEverything(Arrays.copyOf(valid, r.nextInt(valid.length + 1)));
        byte[] mutated = valid.clone();
        for (int i = 1 + r.nextInt(4); i > 0; i--) {
            mutated[r.nextInt(mutated.length)] = (byte) r.nextInt(256);
        }
        decodeEverything(mutated);
    }

    private static void assertBad(byte[] frame) {
        MpProtocolException e = assertThrows(MpProtocolException.class,
                () -> MpKeyCodec.decode(frame, MpKeyCodec.DEFAULT_MAX_TOKENS));
        assertEquals(MpDropReason.BAD_ARGUMENT, e.reason());
    }

    private static byte[] concat(byte[]... parts) {
        int n = 0;
        for (byte[] p : parts) {
            n += p.length;
        }
        byte[] out = new byte[n];
        int at = 0;
        for (byte[] p : parts) {
            System.arraycopy(p, 0, out, at, p.length);
            at += p.length;
        }
        return out;
    }

    private static final byte[] MAP1 = {(byte) 0x81};
    private static final byte[] TOKEN_IDS = MpScalars.encodeString("token_ids");
    private static final byte[] OTHER = MpScalars.encodeString("other");

    @Test
    void hugeDeclaredLengthsAreRefusedBeforeAllocating() {
        // token_ids: array32 of 2^31-1 and of 2^32-1 elements, in a frame of a few bytes
        assertBad(concat(MAP1, TOKEN_IDS, new byte[] {(byte) 0xdd, 0x7f, (byte) 0xff, (byte) 0xff, (byte) 0xff}));
        assertBad(concat(MAP1, TOKEN_IDS, new byte[] {(byte) 0xdd, (byte) 0xff, (byte) 0xff, (byte) 0xff, (byte) 0xff}));
        // an unknown field holding a map32, a str32, a bin32 and an ext32 claiming 2^31 entries or bytes
        for (int code : new int[] {0xdf, 0xdb, 0xc6, 0xc9}) {
            assertBad(concat(MAP1, OTHER, new byte[] {(byte) code, (byte) 0x80, 0, 0, 0, 1}));
        }
        // the key itself is a map32 claiming 2^31 entries
        assertBad(new byte[] {(byte) 0xdf, (byte) 0x80, 0, 0, 0});
    }

    @Test
    void tokenCapAndTokenRangeAreEnforced() throws Exception {
        IpcCacheServerKey key = new IpcCacheServerKey("m", 1, OptionalInt.of(0), new int[100], 0, 0, "r", "", 0);
        byte[] frame = MpKeyCodec.encode(key, MpSchema.BASE);
        assertEquals(key, MpKeyCodec.decode(frame, 100));
        assertThrows(MpProtocolException.class, () -> MpKeyCodec.decode(frame, 99));
        assertBad(concat(MAP1, TOKEN_IDS, new byte[] {(byte) 0x91, (byte) 0xff})); // -1
        assertBad(concat(MAP1, TOKEN_IDS, new byte[] {(byte) 0x91, (byte) 0xcf, 0, 0, 0, 1, 0, 0, 0, 0})); // 2^32
    }

    @Test
    void deepNestingInAnUnknownFieldIsSkippedWithoutRecursion() {
        byte[] deep = new byte[200_000];
        Arrays.fill(deep, (byte) 0x91); // [[[[...]]]], never closed: the frame ends first
        assertBad(concat(MAP1, OTHER, deep));
        byte[] closed = deep.clone();
        closed[closed.length - 1] = (byte) 0xc0; // [[[...[nil]...]]]: well formed, skipped, then fields are missing
        assertBad(concat(MAP1, OTHER, closed));
    }

    @Test
    void multiGroupPayloadsDecodeWithARefusal() throws Exception {
        byte[] base = MpRegistrationCodec.encodePayload(RegisterEngineDrivenContextPayload.singleGroup(1, "m", 1, 16, 2,
                64, "float16", false), MpSchema.EXTENDED);
        // replace the trailing enable_l1_kvweave_quant=false (c2) with true (c3)
        byte[] quant = base.clone();
        quant[quant.length - 1] = (byte) 0xc3;
        RegisterEngineDrivenContextPayload p = MpRegistrationCodec.decodePayload(quant);
        assertEquals(List.of("enable_l1_kvweave_quant"), p.multiGroupFields());
        assertEquals(true, p.refusal().orElseThrow().contains("single-group"));
        assertThrows(IllegalArgumentException.class, () -> MpRegistrationCodec.encodePayload(p, MpSchema.BASE));
    }
}
