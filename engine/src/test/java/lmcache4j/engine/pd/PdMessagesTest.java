package lmcache4j.engine.pd;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.msgpack.core.MessageBufferPacker;
import org.msgpack.core.MessagePack;

import lmcache4j.engine.pd.wire.AllocRequest;
import lmcache4j.engine.pd.wire.AllocResponse;
import lmcache4j.engine.pd.wire.PdMessages;
import lmcache4j.engine.pd.wire.PdProtocolException;
import lmcache4j.engine.pd.wire.ProxyNotif;

/**
 * The PD messages' codec: what it writes it reads back; msgspec's layout (a map, {@code type} first);
 * and whatever a hostile peer sends instead is a {@link PdProtocolException} naming what is wrong,
 * before anything large is allocated.
 */
class PdMessagesTest {
    @Test
    void everyMessageReadsBackAsWritten() throws PdProtocolException {
        AllocRequest r = new AllocRequest(List.of("a@1@0@ff@half", "b@1@0@ee@half"), 1, List.of(2, 4, 256, 64), "half", 3);
        assertEquals(r, PdMessages.decodeAllocRequest(PdMessages.encode(r)));
        AllocResponse a = new AllocResponse(List.of(1), List.of(9L, AllocResponse.REFUSED), "");
        assertEquals(a, PdMessages.decodeAllocResponse(PdMessages.encode(a)));
        assertEquals(new ProxyNotif("x"), PdMessages.decodeProxyNotif(PdMessages.encode(new ProxyNotif("x"))));
        byte[] notice = PdMessages.encode(new ProxyNotif("x"));
        assertEquals((byte) 0x82, notice[0], "a map of two entries");
        assertEquals("type", new String(notice, 2, 4), "msgspec's tag field first");
    }

    @Test
    void hostileFramesAreRefusedNamingWhatIsWrong() throws IOException {
        assertRefused(PdMessages.encode(new ProxyNotif("x")), "expected a message of type AllocRequest, got type ProxyNotif");
        assertRefused(new byte[] {(byte) 0x91, 1}, "is a msgpack map");
        assertRefused(new byte[0], "is a msgpack map");
        try (MessageBufferPacker p = MessagePack.newDefaultBufferPacker()) {
            p.packMapHeader(2).packString("type").packString("AllocRequest").packString("keys").packArrayHeader(1_000_000_000);
            assertRefused(p.toByteArray(), "AllocRequest.keys has 1000000000 entries, more than 4096");
        }
        try (MessageBufferPacker p = MessagePack.newDefaultBufferPacker()) {
            p.packMapHeader(2).packString("type").packString("AllocRequest").packString("fmt").packString("one");
            assertRefused(p.toByteArray(), "AllocRequest.fmt must be an integer");
        }
        try (MessageBufferPacker p = MessagePack.newDefaultBufferPacker()) {
            p.packMapHeader(3).packString("type").packString("AllocRequest").packString("fmt").packInt(1).packString("fmt")
                    .packInt(1);
            assertRefused(p.toByteArray(), "has the field fmt twice");
        }
        try (MessageBufferPacker p = MessagePack.newDefaultBufferPacker()) {
            p.packMapHeader(2).packString("type").packString("AllocRequest").packString("fmt").packLong(1L << 40);
            assertRefused(p.toByteArray(), "outside a 32-bit integer");
        }
        try (MessageBufferPacker p = MessagePack.newDefaultBufferPacker()) {
            p.packMapHeader(2).packString("type").packString("AllocRequest").packString("dtype").packRawStringHeader(5_000);
            p.writePayload(new byte[5_000]);
            assertRefused(p.toByteArray(), "AllocRequest.dtype is 5000 bytes");
        }
        try (MessageBufferPacker p = MessagePack.newDefaultBufferPacker()) {
            p.packMapHeader(3).packString("type").packString("AllocRequest").packString("extra").packInt(4)
                    .packString("fmt").packInt(1);
            assertRefused(p.toByteArray(), "lacks its field keys"); // an unknown field is skipped; a missing one is not
        }
        byte[] ok = PdMessages.encode(new AllocRequest(List.of("k"), 1, List.of(1), "half", 1));
        byte[] trailing = java.util.Arrays.copyOf(ok, ok.length + 1);
        assertRefused(trailing, "followed by more bytes");
    }

    /** An AllocRequest map: {@code extra} unknown fields first, then its five, with the values given. */
    private static byte[] request(int extra, int keys, int rank, int dtypeBytes, long fmt, long last) throws IOException {
        try (MessageBufferPacker p = MessagePack.newDefaultBufferPacker()) {
            p.packMapHeader(1 + extra + 5).packString("type").packString("AllocRequest");
            for (int i = 0; i < extra; i++) {
                p.packString("extra" + i).packInt(i);
            }
            p.packString("keys").packArrayHeader(keys);
            for (int i = 0; i < keys; i++) {
                p.packString("k" + i);
            }
            p.packString("fmt").packLong(fmt);
            p.packString("shape").packArrayHeader(rank);
            for (int i = 0; i < rank; i++) {
                p.packInt(2);
            }
            p.packString("dtype").packString("x".repeat(dtypeBytes));
            p.packString("last_chunk_toks").packLong(last);
            return p.toByteArray();
        }
    }

    @Test
    void everyLimitTakesItsLastValueAndRefusesTheNext() throws IOException {
        AllocRequest widest = PdMessages.decodeAllocRequest(request(64 - 6, PdMessages.MAX_KEYS, PdMessages.MAX_RANK,
                PdMessages.MAX_STRING_BYTES, Integer.MAX_VALUE, Integer.MIN_VALUE));
        assertEquals(PdMessages.MAX_KEYS, widest.keys().size());
        assertEquals(PdMessages.MAX_RANK, widest.shape().size());
        assertEquals(PdMessages.MAX_STRING_BYTES, widest.dtype().length());
        assertEquals(Integer.MAX_VALUE, widest.fmt());
        assertEquals(Integer.MIN_VALUE, widest.lastChunkToks());
        assertRefused(request(64 - 5, 1, 1, 1, 1, 1), "map of 65 entries");
        assertRefused(request(0, PdMessages.MAX_KEYS + 1, 1, 1, 1, 1), "has 4097 entries, more than 4096");
        assertRefused(request(0, 1, PdMessages.MAX_RANK + 1, 1, 1, 1), "has 9 entries, more than 8");
        assertRefused(request(0, 1, 1, PdMessages.MAX_STRING_BYTES + 1, 1, 1), "is 1025 bytes, more than 1024");
        assertRefused(request(0, 1, 1, 1, Integer.MAX_VALUE + 1L, 1), "fmt = 2147483648 is outside a 32-bit integer");
        assertRefused(request(0, 1, 1, 1, 1, Integer.MIN_VALUE - 1L), "last_chunk_toks = -2147483649 is outside");
        assertRefused(new byte[] {(byte) 0x80}, "map of 0 entries");
    }

    @Test
    void aResponseOrANoticeFollowedByMoreBytesIsRefused() {
        byte[] response = PdMessages.encode(new AllocResponse(List.of(0), List.of(3L), ""));
        PdProtocolException e = assertThrows(PdProtocolException.class, () -> PdMessages.decodeAllocResponse(
                java.util.Arrays.copyOf(response, response.length + 1)));
        assertTrue(e.getMessage().contains("followed by more bytes"), e.getMessage());
        byte[] notice = PdMessages.encode(new ProxyNotif("r"));
        e = assertThrows(PdProtocolException.class, () -> PdMessages.decodeProxyNotif(
                java.util.Arrays.copyOf(notice, notice.length + 1)));
        assertTrue(e.getMessage().contains("followed by more bytes"), e.getMessage());
    }

    /** A field this side does not know (a newer sender's) is skipped in every message; a map of the type alone lacks the rest. */
    @Test
    void unknownFieldsAreSkippedInAnswersAndNoticesToo() throws IOException {
        try (MessageBufferPacker p = MessagePack.newDefaultBufferPacker()) {
            p.packMapHeader(5).packString("type").packString("AllocResponse").packString("future").packArrayHeader(2)
                    .packInt(1).packString("x").packString("already_sent_indexes").packArrayHeader(1).packInt(0)
                    .packString("remote_indexes").packArrayHeader(1).packLong(9).packString("error").packString("");
            assertEquals(new AllocResponse(List.of(0), List.of(9L), ""), PdMessages.decodeAllocResponse(p.toByteArray()));
        }
        try (MessageBufferPacker p = MessagePack.newDefaultBufferPacker()) {
            p.packMapHeader(3).packString("type").packString("ProxyNotif").packString("future").packMapHeader(1)
                    .packString("a").packInt(1).packString("req_id").packString("r-1");
            assertEquals(new ProxyNotif("r-1"), PdMessages.decodeProxyNotif(p.toByteArray()));
        }
        try (MessageBufferPacker p = MessagePack.newDefaultBufferPacker()) {
            p.packMapHeader(1).packString("type").packString("AllocRequest");
            assertRefused(p.toByteArray(), "lacks its field keys");
        }
    }

    private static void assertRefused(byte[] frame, String expected) {
        PdProtocolException e = assertThrows(PdProtocolException.class, () -> PdMessages.decodeAllocRequest(frame));
        assertTrue(e.getMessage().contains(expected), e.getMessage());
    }
}
