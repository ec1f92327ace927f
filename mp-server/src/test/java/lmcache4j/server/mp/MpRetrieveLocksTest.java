package lmcache4j.server.mp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.OptionalInt;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import lmcache4j.server.mp.wire.MpScalars;
import lmcache4j.server.mp.wire.MpTransferCodec;
import lmcache4j.server.mp.wire.PrepareRetrieveResponse;
import lmcache4j.server.mp.wire.PrepareStoreResponse;

/**
 * A lookup's read locks go back exactly when the retrieves that hold them commit, or when
 * {@code free_lookup_locks} frees them: never on a commit that prepared nothing, once per prepared
 * retrieve, and for every tensor-parallel rank. Which locks are held is read from the pool after a
 * forced clear: a locked object stays there (as an orphan) until its last lock goes, so the pool's
 * used bytes count the objects still locked. The lock lifetime is far longer than the test, so
 * nothing lapses on its own.
 */
@Timeout(120)
class MpRetrieveLocksTest {
    private static final int CHUNK = 256;
    private static final OptionalInt SCHEDULER = OptionalInt.empty();

    private static MpServer start() throws Exception {
        return MpServer.start(MpServerSettings.loopback(16L << 20).withPorts(0, -1)
                .withLifetimes(Duration.ofSeconds(600), Duration.ofSeconds(600), Duration.ZERO));
    }

    @Test
    void aCommitThatPreparedNothingReleasesNoLockAndARepeatedCommitReleasesOnce() throws Exception {
        try (MpServer server = start(); MpTestClient c = new MpTestClient(server)) {
            for (long instance : new long[] {7, 8, 9}) {
                assertTrue(c.register(instance).error().isEmpty());
            }
            int[] tokens = MpTestClient.tokens(40, 2 * CHUNK);
            store(c, 7, tokens, "w", 0, 1);
            long objectBytes = server.status().usedBytes() / 2;
            lookup(c, tokens, "r7", 1); // two readers lock both objects: instance 7's request and instance 8's
            lookup(c, tokens, "r8", 1);
            prepareRetrieve(c, 7, tokens, "r7", 0, 1);
            prepareRetrieve(c, 8, tokens, "r8", 0, 1);

            commitRetrieve(c, 7, tokens, "r7", 0, 1);
            commitRetrieve(c, 7, tokens, "r7", 0, 1); // again: it released its lock already
            commitRetrieve(c, 9, tokens, "r8", 0, 1); // instance 9 never prepared request r8
            commitRetrieve(c, 7, tokens, "r8", 0, 1); // nor did instance 7

            server.clear();
            assertEquals(2 * objectBytes, server.status().usedBytes(),
                    "instance 8's retrieve still holds both objects: no other commit released its locks");
            commitRetrieve(c, 8, tokens, "r8", 0, 1);
            assertEquals(0, server.status().usedBytes(), "its own commit released them, and the pool took them back");
        }
    }

    @Test
    void oneInstanceInterleavingTwoRetrievesOfTheSameChunksReleasesBothLookupsLocks() throws Exception {
        try (MpServer server = start(); MpTestClient c = new MpTestClient(server)) {
            assertTrue(c.register(7).error().isEmpty());
            int[] tokens = MpTestClient.tokens(41, 2 * CHUNK);
            store(c, 7, tokens, "w", 0, 1);
            lookup(c, tokens, "a", 1);
            lookup(c, tokens, "b", 1);
            prepareRetrieve(c, 7, tokens, "a", 0, 1);
            prepareRetrieve(c, 7, tokens, "b", 0, 1);
            commitRetrieve(c, 7, tokens, "a", 0, 1);
            commitRetrieve(c, 7, tokens, "b", 0, 1);
            server.clear();
            assertEquals(0, server.status().usedBytes(), "request b's commit released b's locks: no lock stays held");
        }
    }

    @Test
    void freeLookupLocksReleasesEveryRanksLockOfEachChunkItFrees() throws Exception {
        try (MpServer server = start(); MpTestClient c = new MpTestClient(server)) {
            assertTrue(c.register(7, 2).error().isEmpty());
            int[] tokens = MpTestClient.tokens(42, 2 * CHUNK);
            assertEquals(2, store(c, 7, tokens, "w0", 0, 2), "rank 0's two chunks");
            assertEquals(2, store(c, 7, tokens, "w1", 1, 2), "rank 1's two chunks");
            assertEquals(4, server.status().objects(), "two chunks of two ranks");
            long objectBytes = server.status().usedBytes() / 4;
            assertEquals(2, lookup(c, tokens, "t", 2), "the scheduler's lookup finds both chunks on both ranks");

            freeLookupLocks(c, tokens, "t", CHUNK, 2 * CHUNK);
            server.clear();
            assertEquals(2 * objectBytes, server.status().usedBytes(), "chunk 1's two objects were freed and dropped;"
                    + " chunk 0's two are still locked");
            freeLookupLocks(c, tokens, "t", 0, CHUNK);
            assertEquals(0, server.status().usedBytes(), "chunk 0's lock on each rank went too");
        }
    }

    @Test
    void aRepeatedOrOverlappingFreeReleasesEachChunksLockOnceLeavingAnotherLookupsLocks() throws Exception {
        try (MpServer server = start(); MpTestClient c = new MpTestClient(server)) {
            assertTrue(c.register(7).error().isEmpty());
            int[] tokens = MpTestClient.tokens(43, 3 * CHUNK);
            assertEquals(3, store(c, 7, tokens, "w", 0, 1));
            long objectBytes = server.status().usedBytes() / 3;
            assertEquals(3, lookup(c, tokens, "t", 1));
            assertEquals(3, lookup(c, tokens, "u", 1), "a second reader locks the three chunks too");

            freeLookupLocks(c, tokens, "t", 0, CHUNK);
            freeLookupLocks(c, tokens, "t", 0, CHUNK); // repeated: chunk 0 is t's no more
            freeLookupLocks(c, tokens, "t", 0, 2 * CHUNK); // overlapping: only chunk 1 is new
            server.clear();
            assertEquals(3 * objectBytes, server.status().usedBytes(),
                    "u's locks hold all three chunks: t's frees released t's locks on chunks 0 and 1 once each");
            freeLookupLocks(c, tokens, "u", 0, 3 * CHUNK);
            assertEquals(objectBytes, server.status().usedBytes(), "t still holds chunk 2");
            freeLookupLocks(c, tokens, "t", 0, 3 * CHUNK);
            assertEquals(0, server.status().usedBytes(), "and t's free of everything released chunk 2 alone");
        }
    }

    @Test
    void aLookupFromALaterChunkFreesTheChunksItLockedAtTheirOffsets() throws Exception {
        try (MpServer server = start(); MpTestClient c = new MpTestClient(server)) {
            assertTrue(c.register(7, 2).error().isEmpty());
            int[] tokens = MpTestClient.tokens(44, 4 * CHUNK);
            assertEquals(4, store(c, 7, tokens, "w0", 0, 2));
            assertEquals(4, store(c, 7, tokens, "w1", 1, 2));
            long objectBytes = server.status().usedBytes() / 8;
            assertNotNull(c.call(8, MpTestClient.key(tokens, CHUNK, 4 * CHUNK, "t", SCHEDULER, 2),
                    MpScalars.encodeInt(2)), "lookup of chunks 1 to 3 answered");
            assertArrayEquals(MpScalars.encodeInt(3), c.call(9, MpScalars.encodeString("t")).get(0), "three chunks hit");

            freeLookupLocks(c, tokens, "t", 2 * CHUNK, 3 * CHUNK);
            server.clear();
            assertEquals(4 * objectBytes, server.status().usedBytes(),
                    "chunk 0 was never locked and chunk 2 was freed: chunks 1 and 3 stay, on both ranks");
            freeLookupLocks(c, tokens, "t", 3 * CHUNK, 4 * CHUNK);
            assertEquals(2 * objectBytes, server.status().usedBytes(), "chunk 3 went, on both ranks");
            freeLookupLocks(c, tokens, "t", 0, 4 * CHUNK);
            assertEquals(0, server.status().usedBytes(), "then chunk 1, and chunks 2 and 3 not again");
        }
    }

    // ---- the protocol's calls ------------------------------------------------------------------

    /** prepare_store and commit_store of worker {@code rank}'s chunks; how many slots it was given. */
    static int store(MpTestClient c, long instance, int[] tokens, String requestId, int rank, int worldSize)
            throws Exception {
        byte[] key = MpTestClient.key(tokens, 0, tokens.length, requestId, OptionalInt.of(rank), worldSize);
        PrepareStoreResponse prepared = MpTransferCodec.decodeStore(c.call(16, key, MpScalars.encodeInt(instance)).get(0));
        assertArrayEquals(MpScalars.encodeBool(true), c.call(17, key, MpScalars.encodeInt(instance),
                MpScalars.encodeBytes(new byte[0])).get(0), "commit_store");
        return prepared.context().slots().orElseThrow().size();
    }

    /** The scheduler's lookup (no worker id) of every rank, then its hit count. */
    static long lookup(MpTestClient c, int[] tokens, String requestId, int worldSize) {
        assertNotNull(c.call(8, MpTestClient.key(tokens, 0, tokens.length, requestId, SCHEDULER, worldSize),
                MpScalars.encodeInt(worldSize)), "lookup answered");
        return lookupHitsOf(c, requestId);
    }

    /** query_prefetch_status: the request's hit count, read once. */
    static long lookupHitsOf(MpTestClient c, String requestId) {
        List<byte[]> hits = c.call(9, MpScalars.encodeString(requestId));
        assertEquals(1, hits.size(), "a count, not None");
        return hits.get(0)[0] & 0x7f; // a positive fixint: counts here are < 128
    }

    static void prepareRetrieve(MpTestClient c, long instance, int[] tokens, String requestId, int rank, int worldSize)
            throws Exception {
        byte[] key = MpTestClient.key(tokens, 0, tokens.length, requestId, OptionalInt.of(rank), worldSize);
        PrepareRetrieveResponse r = MpTransferCodec.decodeRetrieve(c.call(18, key, MpScalars.encodeInt(instance)).get(0));
        assertTrue(r.context().slots().isPresent() && !r.context().slots().get().isEmpty(),
                "prepare_retrieve of " + requestId + " found its slots");
    }

    static void commitRetrieve(MpTestClient c, long instance, int[] tokens, String requestId, int rank, int worldSize) {
        byte[] key = MpTestClient.key(tokens, 0, tokens.length, requestId, OptionalInt.of(rank), worldSize);
        assertArrayEquals(MpScalars.encodeBool(true), c.call(19, key, MpScalars.encodeInt(instance)).get(0),
                "commit_retrieve answers true, as LMCache does");
    }

    static void freeLookupLocks(MpTestClient c, int[] tokens, String requestId, int start, int end) {
        assertNotNull(c.call(12, MpTestClient.key(tokens, start, end, requestId, SCHEDULER, 2), MpScalars.encodeInt(2)),
                "free_lookup_locks answered");
    }
}
