package lmcache4j.server.mp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.OptionalInt;
import java.util.concurrent.Callable;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import lmcache4j.server.mp.wire.MpScalars;
import lmcache4j.server.mp.wire.MpTransferCodec;
import lmcache4j.server.mp.wire.PrepareRetrieveResponse;
import lmcache4j.server.mp.wire.PrepareStoreResponse;

/**
 * How prepared transfers and sessions end other than by their commit: an instance that
 * unregisters takes its own pending writes and reads with it and no other instance's; prepared
 * retrieves stop counting against their key budget once their locks' lifetime has passed; a
 * session unused past its lifetime is swept.
 */
@Timeout(120)
class MpTransferLifetimesTest {
    private static final int CHUNK = 256;

    @Test
    void anInstanceThatUnregistersEndsItsOwnTransfersAndNoOthers() throws Exception {
        try (MpServer server = MpServer.start(MpServerSettings.loopback(16L << 20).withPorts(0, -1)
                .withLifetimes(Duration.ofSeconds(600), Duration.ofSeconds(600), Duration.ZERO));
             MpTestClient c = new MpTestClient(server)) {
            assertTrue(c.register(7).error().isEmpty());
            assertTrue(c.register(8).error().isEmpty());
            int[] read = MpTestClient.tokens(60, 2 * CHUNK);
            int[] written7 = MpTestClient.tokens(61, 2 * CHUNK);
            int[] written8 = MpTestClient.tokens(62, 2 * CHUNK);
            MpRetrieveLocksTest.store(c, 8, read, "w", 0, 1);
            assertEquals(2, MpRetrieveLocksTest.lookup(c, read, "r7", 1));
            MpRetrieveLocksTest.prepareRetrieve(c, 7, read, "r7", 0, 1); // instance 7 holds the lookup's locks
            byte[] key7 = MpTestClient.key(written7, 0, 2 * CHUNK, "s7", OptionalInt.of(0));
            byte[] key8 = MpTestClient.key(written8, 0, 2 * CHUNK, "s8", OptionalInt.of(0));
            assertEquals(2, slots(c.call(16, key7, MpScalars.encodeInt(7))), "instance 7's write prepared");
            assertEquals(2, slots(c.call(16, key8, MpScalars.encodeInt(8))), "instance 8's write prepared");

            assertNotNull(c.call(15, MpScalars.encodeInt(7)), "unregister_kv_cache_engine_driven_context answered");
            assertArrayEquals(MpScalars.encodeBool(true), c.call(17, key8, MpScalars.encodeInt(8),
                    MpScalars.encodeBytes(new byte[0])).get(0), "instance 8's write is its own: it still commits");
            assertNull(c.callWithin(1_000, 17, key7, MpScalars.encodeInt(7), MpScalars.encodeBytes(new byte[0])),
                    "instance 7 is gone: its commit is dropped");
            assertEquals(0, MpRetrieveLocksTest.lookup(c, written7, "check7", 1), "instance 7's write was never published");
            server.clear();
            assertEquals(0, server.status().usedBytes(), "instance 7's prepared retrieve gave its read locks back, and "
                    + "its reservation went: nothing is left locked or reserved");
        }
    }

    @Test
    void preparedRetrievesStopHoldingTheirKeyBudgetWhenTheirLocksLapse() throws Exception {
        // One chunk a key: a budget of 16 keys prepared and not committed. The lock lifetime outlasts the
        // 17 round trips below even on a loaded machine (300 ms did not, once), and lapses well inside the wait.
        try (MpServer server = MpServer.start(MpServerSettings.loopback(16L << 20).withPorts(0, -1)
                .withCaps(64, 8, CHUNK, 1 << 20).withLifetimes(Duration.ofSeconds(600), Duration.ofSeconds(3), Duration.ZERO));
             MpTestClient c = new MpTestClient(server)) {
            assertTrue(c.register(7).error().isEmpty());
            int[] tokens = MpTestClient.tokens(63, CHUNK);
            MpRetrieveLocksTest.store(c, 7, tokens, "w", 0, 1);
            for (int i = 0; i < 16; i++) {
                assertEquals(1, MpRetrieveLocksTest.lookup(c, tokens, "r" + i, 1));
                MpRetrieveLocksTest.prepareRetrieve(c, 7, tokens, "r" + i, 0, 1);
            }
            assertEquals(1, MpRetrieveLocksTest.lookup(c, tokens, "over", 1));
            assertFalse(prepared(c, tokens, "over"), "a 17th key is past the budget: a miss");
            assertEquals(1L, server.status().dropped().get("pending_reads_full"));
            await("the budget freed once the prepared retrieves' locks lapsed", () -> {
                MpRetrieveLocksTest.lookup(c, tokens, "later", 1);
                return prepared(c, tokens, "later");
            });
        }
    }

    @Test
    void aSessionUnusedPastItsLifetimeIsSwept() throws Exception {
        try (MpServer server = MpServer.start(MpServerSettings.loopback(16L << 20).withPorts(0, -1)
                .withLifetimes(Duration.ofMillis(300), Duration.ofSeconds(600), Duration.ZERO));
             MpTestClient c = new MpTestClient(server)) {
            assertEquals(0, MpRetrieveLocksTest.lookup(c, MpTestClient.tokens(64, CHUNK), "idle", 1));
            assertEquals(1, server.status().sessions(), "the lookup's session");
            await("the idle session swept", () -> server.status().sessions() == 0);
        }
    }

    private static int slots(java.util.List<byte[]> reply) throws Exception {
        PrepareStoreResponse r = MpTransferCodec.decodeStore(reply.get(0));
        return r.context().slots().orElseThrow().size();
    }

    private static boolean prepared(MpTestClient c, int[] tokens, String requestId) throws Exception {
        byte[] key = MpTestClient.key(tokens, 0, tokens.length, requestId, OptionalInt.of(0));
        PrepareRetrieveResponse r = MpTransferCodec.decodeRetrieve(c.call(18, key, MpScalars.encodeInt(7)).get(0));
        return r.context().slots().isPresent() && !r.context().slots().get().isEmpty();
    }

    private static void await(String what, Callable<Boolean> done) throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        while (!done.call()) {
            assertTrue(System.nanoTime() < deadline, "not within 20 s: " + what);
            Thread.sleep(100);
        }
    }
}
