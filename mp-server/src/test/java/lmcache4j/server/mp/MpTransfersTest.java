package lmcache4j.server.mp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.OptionalInt;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import lmcache4j.server.mp.wire.MpScalars;
import lmcache4j.server.mp.wire.MpTransferCodec;
import lmcache4j.server.mp.wire.PrepareStoreResponse;

/**
 * Transfers belong to the instance that prepared them: one instance going away aborts its own
 * prepared stores and releases its own prepared retrieves' locks, never another's; a transfer key
 * must name a worker of the model and world size its instance registered.
 */
@Timeout(120)
class MpTransfersTest {
    private static final int CHUNK = 256;

    private static MpServer start() throws Exception {
        return MpServer.start(MpServerSettings.loopback(16L << 20).withPorts(0, -1)
                .withLifetimes(Duration.ofSeconds(600), Duration.ofSeconds(600), Duration.ZERO));
    }

    @Test
    void anInstanceGoingAwayAbortsItsOwnPreparedStoresAndReleasesItsOwnRetrievesOnly() throws Exception {
        try (MpServer server = start(); MpTestClient c = new MpTestClient(server)) {
            assertTrue(c.register(7).error().isEmpty());
            assertTrue(c.register(8).error().isEmpty());
            int[] stored = MpTestClient.tokens(50, CHUNK);
            MpRetrieveLocksTest.store(c, 7, stored, "w", 0, 1);
            long objectBytes = server.status().usedBytes();
            MpRetrieveLocksTest.lookup(c, stored, "r7", 1);
            MpRetrieveLocksTest.prepareRetrieve(c, 7, stored, "r7", 0, 1); // 7 will vanish holding this lock
            MpRetrieveLocksTest.lookup(c, stored, "r8", 1);
            MpRetrieveLocksTest.prepareRetrieve(c, 8, stored, "r8", 0, 1); // 8 keeps holding its own

            byte[] key7 = workerKey(MpTestClient.tokens(51, CHUNK));
            byte[] key8 = workerKey(MpTestClient.tokens(52, CHUNK));
            assertEquals(1, prepareStore(c, key7, 7), "instance 7 prepares a store");
            assertEquals(1, prepareStore(c, key8, 8), "instance 8 prepares another");
            assertNull(c.call(15, MpScalars.encodeInt(7)).stream().findAny().orElse(null), "unregister answers None");

            assertArrayEquals(MpScalars.encodeBool(true), commitStore(c, key8, 8), "8's store outlived 7's going");
            assertTrue(c.register(7).error().isEmpty());
            assertArrayEquals(MpScalars.encodeBool(false), commitStore(c, key7, 7),
                    "the store 7 prepared before it went away is not published when it comes back");
            server.clear();
            assertEquals(objectBytes, server.status().usedBytes(), "after a forced clear only the stored chunk stays,"
                    + " an orphan: 7's going released 7's lock on it and 8's lock holds it");
            MpRetrieveLocksTest.commitRetrieve(c, 8, stored, "r8", 0, 1);
            assertEquals(0, server.status().usedBytes(), "no lock is left: 7's going released 7's, and 8's own commit released 8's");
        }
    }

    @Test
    void aTransferKeyWithoutAWorkerOrOfAnotherWorldSizeIsRefusedAndPickledTensorsAreCounted() throws Exception {
        try (MpServer server = start(); MpTestClient c = new MpTestClient(server)) {
            assertTrue(c.register(7).error().isEmpty());
            int[] tokens = MpTestClient.tokens(53, CHUNK);
            MpRetrieveLocksTest.store(c, 7, tokens, "w", 0, 1);
            byte[] scheduler = MpTestClient.key(tokens, 0, CHUNK, "s", OptionalInt.empty(), 1);
            byte[] otherWorld = MpTestClient.key(tokens, 0, CHUNK, "s", OptionalInt.of(0), 2);
            for (int op : new int[] {16, 18}) { // prepare_store, prepare_retrieve
                assertNull(c.callWithin(1_000, op, scheduler, MpScalars.encodeInt(7)), op + " of a key with no worker_id");
                assertNull(c.callWithin(1_000, op, otherWorld, MpScalars.encodeInt(7)), op + " of a world of 2 for 7's 1");
            }
            assertEquals(4L, server.status().dropped().get("bad_argument"), server.status().dropped().toString());

            assertArrayEquals(MpScalars.encodeBool(false), c.call(17, workerKey(tokens), MpScalars.encodeInt(7),
                    MpScalars.encodeBytes(new byte[] {1, 2, 3})).get(0), "pickled tensors are answered false");
            assertEquals(1L, server.status().dropped().get("pickled_data"), "and counted");
        }
    }

    private static byte[] workerKey(int[] tokens) {
        return MpTestClient.key(tokens, 0, tokens.length, "w", OptionalInt.of(0), 1);
    }

    private static int prepareStore(MpTestClient c, byte[] key, long instance) throws Exception {
        PrepareStoreResponse r = MpTransferCodec.decodeStore(c.call(16, key, MpScalars.encodeInt(instance)).get(0));
        return r.context().slots().orElseThrow().size();
    }

    private static byte[] commitStore(MpTestClient c, byte[] key, long instance) {
        return c.call(17, key, MpScalars.encodeInt(instance), MpScalars.encodeBytes(new byte[0])).get(0);
    }
}
