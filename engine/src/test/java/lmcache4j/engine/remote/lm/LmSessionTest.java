package lmcache4j.engine.remote.lm;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Random;

import org.junit.jupiter.api.Test;

class LmSessionTest {
    private static final byte[] TOKEN = "a-deployment-token".getBytes(StandardCharsets.UTF_8);

    @Test
    void proofsDependOnTheTokenTheNoncesAndTheSide() {
        byte[] cn = LmSession.nonce();
        byte[] sn = LmSession.nonce();
        assertEquals(LmSession.NONCE_BYTES, cn.length);
        assertFalse(Arrays.equals(cn, sn), "fresh nonces");
        byte[] server = LmSession.serverProof(TOKEN, cn, sn);
        assertArrayEquals(server, LmSession.serverProof(TOKEN, cn, sn), "deterministic");
        assertFalse(Arrays.equals(server, LmSession.clientProof(TOKEN, cn, sn)), "a server's proof is not a client's");
        assertFalse(Arrays.equals(server, LmSession.serverProof("another".getBytes(StandardCharsets.UTF_8), cn, sn)));
        assertFalse(Arrays.equals(server, LmSession.serverProof(TOKEN, sn, cn)), "nonces are not interchangeable");
        assertFalse(Arrays.equals(server, LmSession.serverProof(TOKEN, cn, LmSession.nonce())));
    }

    @Test
    void bothSidesTagAlikeAndAnyChangeFailsTheTag() {
        byte[] cn = LmSession.nonce();
        byte[] sn = LmSession.nonce();
        LmSession server = LmSession.established(TOKEN, cn, sn);
        LmSession client = LmSession.established(TOKEN, cn, sn);
        byte[] header = "GET some-key".getBytes(StandardCharsets.UTF_8);
        Random rnd = new Random(7);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment payload = arena.allocate(300_000); // off-heap, fed through the scratch buffer in pieces
            for (long i = 0; i < payload.byteSize(); i++) {
                payload.set(java.lang.foreign.ValueLayout.JAVA_BYTE, i, (byte) rnd.nextInt());
            }
            for (int message = 0; message < 3; message++) {
                byte[] tag = server.serverToClient().next().update(header).update(payload.asByteBuffer()).finish();
                assertEquals(LmSession.TAG_BYTES, tag.length);
                if (message == 1) { // a flipped payload byte
                    byte before = payload.get(java.lang.foreign.ValueLayout.JAVA_BYTE, 123_456);
                    payload.set(java.lang.foreign.ValueLayout.JAVA_BYTE, 123_456, (byte) (before ^ 1));
                    assertFalse(client.serverToClient().next().update(header).update(payload.asByteBuffer()).verify(tag));
                    payload.set(java.lang.foreign.ValueLayout.JAVA_BYTE, 123_456, before);
                } else if (message == 2) { // another key in the header
                    byte[] other = "GET other-key".getBytes(StandardCharsets.UTF_8);
                    assertFalse(client.serverToClient().next().update(other).update(payload.asByteBuffer()).verify(tag));
                } else {
                    // a heap copy of the same bytes, split differently, tags the same
                    byte[] heap = payload.toArray(java.lang.foreign.ValueLayout.JAVA_BYTE);
                    PayloadTag.Message m = client.serverToClient().next().update(header);
                    m.update(ByteBuffer.wrap(heap, 0, 1000)).update(ByteBuffer.wrap(heap, 1000, heap.length - 1000));
                    assertTrue(m.verify(tag));
                }
            }
        }
    }

    @Test
    void aTagCannotBeReplayedOnTheNextMessageOrTheOtherDirection() {
        byte[] cn = LmSession.nonce();
        byte[] sn = LmSession.nonce();
        LmSession server = LmSession.established(TOKEN, cn, sn);
        LmSession client = LmSession.established(TOKEN, cn, sn);
        byte[] body = "the same bytes".getBytes(StandardCharsets.UTF_8);
        byte[] first = server.serverToClient().next().update(body).finish();
        assertTrue(client.serverToClient().next().update(body).verify(first));
        assertFalse(client.serverToClient().next().update(body).verify(first), "message 1 is not message 0");
        assertFalse(client.clientToServer().next().update(body).verify(first), "nor the other direction's message 0");
        LmSession otherConnection = LmSession.established(TOKEN, LmSession.nonce(), sn);
        assertFalse(otherConnection.serverToClient().next().update(body).verify(first), "nor another connection's");
    }
}
