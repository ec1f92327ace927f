package lmcache4j.server.mp.wire;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.List;
import java.util.OptionalInt;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/**
 * A frame is exactly one value: every decoder refuses a well-formed value followed by anything
 * (a client's framing bug, or bytes smuggled past the first value) with a protocol error that says
 * so, instead of reading the first value and ignoring the rest.
 */
class MpTrailingBytesTest {

    private static byte[] withTrailingByte(byte[] frame) {
        byte[] longer = Arrays.copyOf(frame, frame.length + 1);
        longer[frame.length] = (byte) 0xc0; // msgpack nil: a whole second value
        return longer;
    }

    private static void refused(String what, Executable decode) {
        MpProtocolException e = assertThrows(MpProtocolException.class, decode, what);
        assertTrue(e.getMessage().contains("1 bytes after the value"), what + ": " + e.getMessage());
    }

    @Test
    void everyScalarDecoderRefusesASecondValue() {
        refused("int", () -> MpScalars.decodeInt(withTrailingByte(MpScalars.encodeInt(7)), "n", 0, 10));
        refused("optional int", () -> MpScalars.decodeOptionalInt(withTrailingByte(MpScalars.encodeInt(7)), "n", 0, 10));
        refused("number", () -> MpScalars.decodeNumber(withTrailingByte(MpScalars.encodeFloat(1.5)), "t"));
        refused("string", () -> MpScalars.decodeString(withTrailingByte(MpScalars.encodeString("r")), "s", 16));
        refused("bool", () -> MpScalars.decodeBool(withTrailingByte(MpScalars.encodeBool(true)), "b"));
        refused("bytes", () -> MpScalars.decodeBytes(withTrailingByte(MpScalars.encodeBytes(new byte[3])), "d", 16));
        refused("any value", () -> MpScalars.checkWellFormed(withTrailingByte(MpScalars.encodeInt(7)), "end_info"));
    }

    @Test
    void theStructuredDecodersRefuseASecondValue() {
        byte[] key = MpKeyCodec.encode(new IpcCacheServerKey("m", 1, OptionalInt.of(0), new int[] {1, 2, 3}, 0, 3, "r", "", 0),
                MpSchema.BASE);
        refused("key", () -> MpKeyCodec.decode(withTrailingByte(key), 1024));
        refused("prepare_store's answer", () -> MpTransferCodec.decodeStore(withTrailingByte(MpTransferCodec.encode(
                new PrepareStoreResponse(TransferContext.store(List.of(), List.of()))))));
        refused("prepare_retrieve's answer", () -> MpTransferCodec.decodeRetrieve(withTrailingByte(MpTransferCodec.encode(
                PrepareRetrieveResponse.missing()))));
        refused("registration", () -> MpRegistrationCodec.decodePayload(withTrailingByte(MpRegistrationCodec.encodePayload(
                RegisterEngineDrivenContextPayload.singleGroup(7, "m", 1, 16, 2, 64, "bfloat16", false), MpSchema.BASE))));
        refused("registration's answer", () -> MpRegistrationCodec.decodeResponse(withTrailingByte(
                MpRegistrationCodec.encodeResponse(RegisterEngineDrivenContextResponse.accepted("shm", 1 << 20)))));
    }

    @Test
    void falseDecodesAsFalse() throws MpProtocolException {
        assertFalse(MpScalars.decodeBool(MpScalars.encodeBool(false), "b"));
        assertTrue(MpScalars.decodeBool(MpScalars.encodeBool(true), "b"));
        assertEquals(7, MpScalars.decodeInt(MpScalars.encodeInt(7), "n", 0, 10));
    }
}
