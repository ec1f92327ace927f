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
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

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
        // the session of a hello without an offer tags with Poly1305 under the first key
        LmSession old = LmSession.established(TOKEN, cn, sn);
        assertEquals(PayloadTag.Algorithm.POLY1305, old.algorithm());
        byte[] body = "a payload".getBytes(StandardCharsets.UTF_8);
        assertTrue(LmSession.established(TOKEN, cn, sn, PayloadTag.Algorithm.POLY1305).serverToClient().next().update(body)
                .verify(old.serverToClient().next().update(body).finish()));
    }

    @ParameterizedTest
    @EnumSource(PayloadTag.Algorithm.class)
    void bothSidesTagAlikeAndAnyChangeFailsTheTag(PayloadTag.Algorithm algorithm) {
        byte[] cn = LmSession.nonce();
        byte[] sn = LmSession.nonce();
        LmSession server = LmSession.established(TOKEN, cn, sn, algorithm);
        LmSession client = LmSession.established(TOKEN, cn, sn, algorithm);
        assertEquals(algorithm, client.algorithm());
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

    @ParameterizedTest
    @EnumSource(PayloadTag.Algorithm.class)
    void aTagCannotBeReplayedOnTheNextMessageOrTheOtherDirection(PayloadTag.Algorithm algorithm) {
        byte[] cn = LmSession.nonce();
        byte[] sn = LmSession.nonce();
        LmSession server = LmSession.established(TOKEN, cn, sn, algorithm);
        LmSession client = LmSession.established(TOKEN, cn, sn, algorithm);
        byte[] body = "the same bytes".getBytes(StandardCharsets.UTF_8);
        byte[] first = server.serverToClient().next().update(body).finish();
        assertTrue(client.serverToClient().next().update(body).verify(first));
        assertFalse(client.serverToClient().next().update(body).verify(first), "message 1 is not message 0");
        assertFalse(client.clientToServer().next().update(body).verify(first), "nor the other direction's message 0");
        LmSession otherConnection = LmSession.established(TOKEN, LmSession.nonce(), sn, algorithm);
        assertFalse(otherConnection.serverToClient().next().update(body).verify(first), "nor another connection's");
    }

    @Test
    void aesGcmTagsAreTheJdksAesGcmTagOfTheBytesEncrypted() throws Exception {
        // the tag is AES-256-GCM's over the bytes encrypted (the ciphertext not sent): the JDK's own cipher, under
        // the session's AES-GCM key and the client's first nonce, agrees, however the bytes were split
        byte[] cn = LmSession.nonce();
        byte[] sn = LmSession.nonce();
        byte[] body = new byte[200_003];
        new Random(5).nextBytes(body);
        PayloadTag.Message m = LmSession.established(TOKEN, cn, sn, PayloadTag.Algorithm.AES_GCM).clientToServer().next();
        m.update(java.util.Arrays.copyOf(body, 7)).update(ByteBuffer.wrap(body, 7, 100_000));
        try (Arena arena = Arena.ofConfined()) { // and off-heap, through the scratch buffer
            MemorySegment rest = arena.allocate(body.length - 100_007);
            MemorySegment.copy(body, 100_007, rest, java.lang.foreign.ValueLayout.JAVA_BYTE, 0, (int) rest.byteSize());
            m.update(rest.asByteBuffer());
        }
        byte[] tag = m.finish();
        javax.crypto.Mac hmac = javax.crypto.Mac.getInstance("HmacSHA256");
        hmac.init(new javax.crypto.spec.SecretKeySpec(TOKEN, "HmacSHA256"));
        hmac.update("lmcache4j lm:// aes-gcm key v1".getBytes(StandardCharsets.US_ASCII));
        hmac.update(cn);
        byte[] key = hmac.doFinal(sn);
        javax.crypto.Cipher gcm = javax.crypto.Cipher.getInstance("AES/GCM/NoPadding");
        byte[] nonce = new byte[12];
        nonce[0] = 2; // the client's direction, message 0
        gcm.init(javax.crypto.Cipher.ENCRYPT_MODE, new javax.crypto.spec.SecretKeySpec(key, "AES"),
                new javax.crypto.spec.GCMParameterSpec(128, nonce));
        byte[] sealed = gcm.doFinal(body);
        assertArrayEquals(java.util.Arrays.copyOfRange(sealed, body.length, sealed.length), tag);
    }

    @Test
    void thePreferenceCanBeSetForTheProcessAndABadOneIsNamed() {
        String before = System.getProperty(PayloadTag.PREFERENCE_PROPERTY);
        try {
            System.setProperty(PayloadTag.PREFERENCE_PROPERTY, "AES-GCM");
            assertEquals(PayloadTag.Algorithm.AES_GCM, PayloadTag.Algorithm.preferred());
            System.setProperty(PayloadTag.PREFERENCE_PROPERTY, " poly1305 ");
            assertEquals(PayloadTag.Algorithm.POLY1305, PayloadTag.Algorithm.preferred());
            System.setProperty(PayloadTag.PREFERENCE_PROPERTY, "hmac");
            IllegalArgumentException e = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
                    PayloadTag.Algorithm::preferred);
            assertEquals("-Dlmcache4j.payload_tag=hmac names no payload tag: poly1305 or aes-gcm", e.getMessage());
        } finally {
            if (before == null) {
                System.clearProperty(PayloadTag.PREFERENCE_PROPERTY);
            } else {
                System.setProperty(PayloadTag.PREFERENCE_PROPERTY, before);
            }
        }
    }

    @Test
    void codesNameTheAlgorithmsAndAnUnknownCodeIsRefused() {
        assertEquals(PayloadTag.Algorithm.POLY1305, PayloadTag.Algorithm.ofCode(1));
        assertEquals(PayloadTag.Algorithm.AES_GCM, PayloadTag.Algorithm.ofCode(2));
        for (int bad : new int[] {0, 3, 255}) {
            org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class, () -> PayloadTag.Algorithm.ofCode(bad));
        }
    }

    @Test
    void poly1305IsThoughtFastOnlyWhereHotSpotUsesItsIntrinsic() {
        java.util.Set<String> ifma = java.util.Set.of("avx2", "avx512f", "avx512ifma", "avx512vl", "avx512bw");
        assertTrue(PayloadTag.VmPoly1305.intrinsic(ifma, 3, 64));
        assertFalse(PayloadTag.VmPoly1305.intrinsic(ifma, 2, 64), "-XX:UseAVX=2 turns it off");
        assertFalse(PayloadTag.VmPoly1305.intrinsic(ifma, 3, 32), "as does a MaxVectorSize under 64");
        // Cascade Lake: AVX-512 without IFMA
        assertFalse(PayloadTag.VmPoly1305.intrinsic(java.util.Set.of("avx2", "avx512f", "avx512vl", "avx512bw"), 3, 64));
        assertFalse(PayloadTag.VmPoly1305.intrinsic(java.util.Set.of("avx2", "avx512ifma"), 3, 64), "IFMA alone");
    }
}
