package lmcache4j.server.mp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.OptionalInt;
import java.util.Random;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import lmcache4j.server.mp.wire.MpScalars;
import lmcache4j.server.mp.wire.MpTransferCodec;
import lmcache4j.server.mp.wire.PrepareStoreResponse;

/**
 * Bad input at every door of the MP server: malformed frames, unknown and refused operations,
 * wrong argument counts, hostile lengths, transfers of keys never prepared, a client that
 * prepares and never commits, and one that vanishes holding read locks. Each is dropped or
 * answered as LMCache's protocol allows, counted, and the server goes on serving.
 */
@Timeout(120)
class MpServerAbuseTest {
    private static final int CHUNK = 256;

    private static MpServer start(Duration lockTtl) throws Exception {
        return MpServer.start(MpServerSettings.loopback(16L << 20).withPorts(0, -1)
                .withLifetimes(Duration.ofSeconds(600), lockTtl, Duration.ZERO));
    }

    @Test
    void malformedRequestsAreDroppedCountedAndTheServerServesOn() throws Exception {
        try (MpServer server = start(Duration.ofSeconds(300)); MpTestClient c = new MpTestClient(server)) {
            assertTrue(c.ping(), "connected first: frames sent into a handshake JeroMQ remakes can be lost");
            Random rnd = new Random(26);
            List<List<byte[]>> bad = new ArrayList<>();
            bad.add(List.of(MpScalars.encodeInt(1))); // uid only
            bad.add(List.of(MpScalars.encodeInt(1), new byte[] {(byte) 0xc1})); // not msgpack
            bad.add(List.of(MpScalars.encodeInt(1), MpScalars.encodeInt(99))); // an id outside the table
            bad.add(List.of(MpScalars.encodeInt(1), MpScalars.encodeString("drop_everything"))); // an unknown name
            bad.add(List.of(MpScalars.encodeInt(1), MpScalars.encodeFloat(8.0))); // a float op
            bad.add(List.of(MpScalars.encodeInt(1), MpScalars.encodeInt(16))); // prepare_store without arguments
            bad.add(List.of(MpScalars.encodeInt(1), MpScalars.encodeInt(8), new byte[] {(byte) 0xdd, 0x7f, -1, -1, -1},
                    MpScalars.encodeInt(1))); // a key declaring 2^31 elements
            bad.add(List.of(MpScalars.encodeInt(1), MpScalars.encodeInt(1), new byte[] {1})); // register_kv_cache (CUDA IPC)
            List<byte[]> many = new ArrayList<>(List.of(MpScalars.encodeInt(1), MpScalars.encodeInt(24)));
            for (int i = 0; i < 20; i++) {
                many.add(new byte[] {0});
            }
            bad.add(many); // far more frames than any operation
            for (int i = 0; i < 200; i++) { // random frames
                List<byte[]> frames = new ArrayList<>();
                int n = 1 + rnd.nextInt(6);
                for (int f = 0; f < n; f++) {
                    byte[] b = new byte[rnd.nextInt(40)];
                    rnd.nextBytes(b);
                    frames.add(b);
                }
                bad.add(frames);
            }
            for (List<byte[]> frames : bad) {
                c.sendRaw(frames);
            }
            assertTrue(c.ping(), "the server answers after " + bad.size() + " bad requests");
            MpStatus status = server.status();
            long dropped = status.dropped().values().stream().mapToLong(Long::longValue).sum();
            assertTrue(dropped >= 9, status.dropped().toString());
            for (String reason : List.of("short_message", "bad_op", "unknown_op", "arity", "bad_argument", "refused_op",
                    "too_many_frames")) {
                assertTrue(status.dropped().containsKey(reason), reason + " counted: " + status.dropped());
            }
        }
    }

    @Test
    void transfersOfKeysNeverPreparedAnswerFalseOrNothingAndTouchNoLock() throws Exception {
        try (MpServer server = start(Duration.ofSeconds(300)); MpTestClient c = new MpTestClient(server)) {
            assertTrue(c.register(7).error().isEmpty());
            int[] tokens = MpTestClient.tokens(1, 2 * CHUNK);
            byte[] key = MpTestClient.key(tokens, 0, 2 * CHUNK, "r", OptionalInt.of(0));
            List<byte[]> commit = c.call(17, key, MpScalars.encodeInt(7), MpScalars.encodeBytes(new byte[0]));
            assertTrue(Arrays.equals(MpScalars.encodeBool(false), commit.get(0)), "commit_store of nothing prepared");
            List<byte[]> pickled = c.call(17, key, MpScalars.encodeInt(7), MpScalars.encodeBytes(new byte[] {1, 2, 3}));
            assertTrue(Arrays.equals(MpScalars.encodeBool(false), pickled.get(0)), "pickled tensors are refused");
            assertEquals(1L, server.status().dropped().get("pickled_data"), "and counted: " + server.status().dropped());
            List<byte[]> retrieve = c.call(19, key, MpScalars.encodeInt(7));
            assertTrue(Arrays.equals(MpScalars.encodeBool(true), retrieve.get(0)), "LMCache answers true");
            assertNull(c.callWithin(1_000, 16, key, MpScalars.encodeInt(12345)), "an unregistered instance gets no reply");
            assertTrue(server.status().dropped().containsKey("bad_argument"));
            assertTrue(c.ping());
        }
    }

    /**
     * A transfer is one worker's: a prepare whose key names no worker, or another world size than
     * the instance registered, is dropped (no reply, counted), reserving and handing out nothing.
     */
    @Test
    void preparesOfAKeyWithoutAWorkerOrOfAnotherWorldAreDropped() throws Exception {
        try (MpServer server = start(Duration.ofSeconds(300)); MpTestClient c = new MpTestClient(server)) {
            assertTrue(c.register(7).error().isEmpty());
            int[] tokens = MpTestClient.tokens(4, 2 * CHUNK);
            byte[] scheduler = MpTestClient.key(tokens, 0, 2 * CHUNK, "r", OptionalInt.empty());
            byte[] otherWorld = MpTestClient.key(tokens, 0, 2 * CHUNK, "r", OptionalInt.of(0), 2);
            assertNull(c.callWithin(1_000, 16, scheduler, MpScalars.encodeInt(7)), "prepare_store without a worker");
            assertNull(c.callWithin(1_000, 16, otherWorld, MpScalars.encodeInt(7)), "prepare_store of world size 2");
            assertEquals(0, server.status().usedBytes(), "no slot reserved");
            store(c, tokens, "w");
            assertNull(c.callWithin(1_000, 18, scheduler, MpScalars.encodeInt(7)), "prepare_retrieve without a worker");
            assertNull(c.callWithin(1_000, 18, otherWorld, MpScalars.encodeInt(7)), "prepare_retrieve of world size 2");
            assertEquals(4L, server.status().dropped().get("bad_argument"), server.status().dropped().toString());
            assertTrue(c.ping());
        }
    }

    @Test
    void aClientThatPreparesAndNeverCommitsHoldsNothingPastTheLockLifetime() throws Exception {
        try (MpServer server = start(Duration.ofMillis(300)); MpTestClient c = new MpTestClient(server)) {
            assertTrue(c.register(7).error().isEmpty());
            int[] tokens = MpTestClient.tokens(2, 4 * CHUNK);
            byte[] key = MpTestClient.key(tokens, 0, 4 * CHUNK, "r", OptionalInt.of(0));
            PrepareStoreResponse prepared = MpTransferCodec.decodeStore(c.call(16, key, MpScalars.encodeInt(7)).get(0));
            assertEquals(4, prepared.context().slots().orElseThrow().size());
            assertTrue(server.status().usedBytes() > 0);
            awaitUsedBytes(server, 0); // the reservation lapses; the slots go back to the pool
            List<byte[]> late = c.call(17, key, MpScalars.encodeInt(7), MpScalars.encodeBytes(new byte[0]));
            assertTrue(Arrays.equals(MpScalars.encodeBool(false), late.get(0)), "a commit after the lifetime publishes nothing");
            assertEquals(0, lookup(c, tokens, "after"), "nothing was published");
        }
    }

    @Test
    void aClientThatVanishesHoldingReadLocksLosesThemAndTheMemoryIsReused() throws Exception {
        try (MpServer server = start(Duration.ofMillis(300))) {
            int[] tokens = MpTestClient.tokens(3, 4 * CHUNK);
            try (MpTestClient writer = new MpTestClient(server)) {
                assertTrue(writer.register(7).error().isEmpty());
                store(writer, tokens, "w");
            }
            try (MpTestClient reader = new MpTestClient(server)) {
                assertEquals(4, lookup(reader, tokens, "gone")); // locks 4 objects, then the client is gone
            }
            assertTrue(server.status().objects() == 4);
            long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
            while (server.status().expiredLocks() == 0 && System.nanoTime() < deadline) {
                Thread.sleep(50);
            }
            assertTrue(server.status().expiredLocks() > 0, "the vanished reader's locks lapsed");
            server.clear(); // a plain clear drops only what no one holds: all four, now
            awaitUsedBytes(server, 0);
        }
    }

    private static void store(MpTestClient c, int[] tokens, String requestId) throws Exception {
        byte[] key = MpTestClient.key(tokens, 0, tokens.length, requestId, OptionalInt.of(0));
        PrepareStoreResponse prepared = MpTransferCodec.decodeStore(c.call(16, key, MpScalars.encodeInt(7)).get(0));
        assertFalse(prepared.context().slots().orElseThrow().isEmpty());
        List<byte[]> done = c.call(17, key, MpScalars.encodeInt(7), MpScalars.encodeBytes(new byte[0]));
        assertTrue(Arrays.equals(MpScalars.encodeBool(true), done.get(0)));
    }

    private static long lookup(MpTestClient c, int[] tokens, String requestId) {
        byte[] key = MpTestClient.key(tokens, 0, tokens.length, requestId, OptionalInt.empty());
        assertNotNull(c.call(8, key, MpScalars.encodeInt(1)), "lookup answered");
        byte[] hits = c.call(9, MpScalars.encodeString(requestId)).get(0);
        return ByteBuffer.wrap(hits).get() & 0x7f; // a positive fixint: counts here are < 128
    }

    private static void awaitUsedBytes(MpServer server, long bytes) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        while (server.status().usedBytes() != bytes && System.nanoTime() < deadline) {
            Thread.sleep(50);
        }
        assertEquals(bytes, server.status().usedBytes());
    }
}
