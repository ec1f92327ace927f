package lmcache4j.server.mp.wire;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Set;

import org.junit.jupiter.api.Test;

/** The operation table and the ROUTER framing: what parses, what is refused and why. */
class MpFramingTest {
    private static final byte[] ID = {9};
    private static final byte[] UID = {0x05};

    private static MpProtocolException refused(List<byte[]> frames) {
        return assertThrows(MpProtocolException.class, () -> MpFrames.parse(frames));
    }

    private static byte[] hex(String h) {
        return HexFormat.of().parseHex(h);
    }

    @Test
    void tableHasEveryFrozenIdOnceAndServesOnlyTheEngineDrivenSet() {
        Set<String> names = new HashSet<>();
        for (int id = 1; id <= 34; id++) {
            MpOperation op = MpOperation.byId(id).orElseThrow();
            assertEquals(id, op.id());
            assertTrue(names.add(op.wireName()));
            assertEquals(op.served(), id >= 8 && id <= 24, op.wireName());
        }
        assertTrue(MpOperation.byId(0).isEmpty());
        assertTrue(MpOperation.byId(35).isEmpty());
        assertEquals(MpOperation.CB_RETRIEVE_PRE_COMPUTED, MpOperation.byName("cb_retrieve_pre_computed_v3").orElseThrow());
        assertTrue(MpOperation.CLEAR.acceptsArity(0) && MpOperation.CLEAR.acceptsArity(1));
        assertFalse(MpOperation.CLEAR.acceptsArity(2));
        assertTrue(MpOperation.END_SESSION.acceptsArity(2) && !MpOperation.END_SESSION.acceptsArity(0));
    }

    @Test
    void opFramesOfOtherTypesOrUnknownValuesAreRefusedWithTheirReason() {
        assertEquals(MpDropReason.UNKNOWN_OP, refused(List.of(ID, UID, hex("00"))).reason());
        assertEquals(MpDropReason.UNKNOWN_OP, refused(List.of(ID, UID, hex("23"))).reason()); // 35
        assertEquals(MpDropReason.UNKNOWN_OP, refused(List.of(ID, UID, hex("ff"))).reason()); // -1
        assertEquals(MpDropReason.UNKNOWN_OP, refused(List.of(ID, UID, hex("cfffffffffffffffff"))).reason());
        assertEquals(MpDropReason.UNKNOWN_OP, refused(List.of(ID, UID, hex("a3666f6f"))).reason()); // "foo"
        assertEquals(MpDropReason.BAD_OP, refused(List.of(ID, UID, hex("c0"))).reason()); // nil
        assertEquals(MpDropReason.BAD_OP, refused(List.of(ID, UID, hex("cb3ff0000000000000"))).reason()); // 1.0
        assertEquals(MpDropReason.BAD_OP, refused(List.of(ID, UID, hex("9108"))).reason()); // [8]
        assertEquals(MpDropReason.BAD_OP, refused(List.of(ID, UID, hex("0808"))).reason()); // trailing bytes
        assertEquals(MpDropReason.BAD_OP, refused(List.of(ID, UID, new byte[0])).reason());
        assertEquals(MpDropReason.BAD_OP, refused(List.of(ID, UID, hex("a56c6f6f"))).reason()); // truncated str
        assertEquals(MpDropReason.BAD_OP, refused(List.of(ID, UID, hex("cd00"))).reason()); // truncated uint16
    }

    @Test
    void shortMessagesAndWrongArityAreRefused() {
        assertEquals(MpDropReason.SHORT_MESSAGE, refused(List.of(ID, UID)).reason());
        assertEquals(MpDropReason.SHORT_MESSAGE, refused(List.of()).reason());
        assertEquals(MpDropReason.ARITY, refused(List.of(ID, UID, hex("15"), hex("c0"))).reason()); // get_chunk_size(x)
        assertEquals(MpDropReason.ARITY, refused(List.of(ID, UID, hex("14"), hex("c2"), hex("c2"))).reason()); // clear(a, b)
        assertEquals(MpDropReason.ARITY, refused(List.of(ID, UID, hex("0d"))).reason()); // end_session()
    }

    @Test
    void aNonCanonicalIdStillNamesItsOperationAndIsEchoedAsReceived() throws Exception {
        byte[] op = hex("cd0015"); // 21 as uint16: msgspec decodes it, so the server must too
        MpRequest request = MpFrames.parse(List.of(ID, UID, op));
        assertEquals(MpOperation.GET_CHUNK_SIZE, request.operation());
        List<byte[]> reply = MpFrames.reply(request, MpScalars.encodeInt(256));
        assertEquals(4, reply.size());
        assertArrayEquals(op, reply.get(2));
        assertArrayEquals(hex("cd0100"), reply.get(3));
        assertEquals(3, MpFrames.replyWithoutResult(request).size());
    }

    @Test
    void theStringFormOfAnOperationParsesLikeItsId() throws Exception {
        MpRequest request = MpFrames.parse(List.of(ID, UID, MpScalars.encodeString("clear")));
        assertEquals(MpOperation.CLEAR, request.operation());
        assertTrue(request.args().isEmpty());
    }
}
