package lmcache4j.server.mp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.OptionalInt;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import lmcache4j.server.mp.wire.MpScalars;

/**
 * A lookup that starts past the prompt's first chunk, of two tensor-parallel ranks, and the
 * {@code free_lookup_locks} calls that free parts of it: each frees its own chunks' locks on every
 * rank, relative to where the lookup started, and never the same lock twice. What is still locked
 * is read from the pool after a forced clear, as in {@link MpRetrieveLocksTest}: a locked object
 * stays (as an orphan) until its last lock goes, and then goes at once.
 */
@Timeout(120)
class MpLookupRangesTest {
    private static final int CHUNK = 256;
    private static final int RANKS = 2;

    private static MpServer start() throws Exception {
        return MpServer.start(MpServerSettings.loopback(16L << 20).withPorts(0, -1)
                .withLifetimes(Duration.ofSeconds(600), Duration.ofSeconds(600), Duration.ZERO));
    }

    /** Three chunks stored on both ranks; returns one object's bytes. */
    private static long storeThreeChunks(MpServer server, MpTestClient c, int[] tokens) throws Exception {
        assertTrue(c.register(7, RANKS).error().isEmpty());
        for (int rank = 0; rank < RANKS; rank++) {
            assertEquals(3, MpRetrieveLocksTest.store(c, 7, tokens, "w" + rank, rank, RANKS));
        }
        assertEquals(3 * RANKS, server.status().objects());
        return server.status().usedBytes() / (3 * RANKS);
    }

    /** The scheduler's lookup of {@code [start, end)} on every rank, then its hit count. */
    private static long lookup(MpTestClient c, int[] tokens, String requestId, int start, int end) {
        assertNotNull(c.call(8, MpTestClient.key(tokens, start, end, requestId, OptionalInt.empty(), RANKS),
                MpScalars.encodeInt(RANKS)), "lookup answered");
        List<byte[]> hits = c.call(9, MpScalars.encodeString(requestId));
        return hits.get(0)[0] & 0x7f;
    }

    private static void free(MpTestClient c, int[] tokens, String requestId, int start, int end) {
        assertNotNull(c.call(12, MpTestClient.key(tokens, start, end, requestId, OptionalInt.empty(), RANKS),
                MpScalars.encodeInt(RANKS)), "free_lookup_locks answered");
    }

    @Test
    void aLookupFromTheSecondChunkFreesEachChunkItWasAskedToAndNoOther() throws Exception {
        try (MpServer server = start(); MpTestClient c = new MpTestClient(server)) {
            int[] tokens = MpTestClient.tokens(50, 3 * CHUNK);
            long object = storeThreeChunks(server, c, tokens);
            assertEquals(2, lookup(c, tokens, "t", CHUNK, 3 * CHUNK), "t locks chunks 1 and 2");
            assertEquals(1, lookup(c, tokens, "u", 2 * CHUNK, 3 * CHUNK), "u locks chunk 2");
            server.clear();
            assertEquals(4 * object, server.status().usedBytes(), "chunks 1 and 2 are locked on both ranks; chunk 0 went");

            free(c, tokens, "t", CHUNK, 2 * CHUNK);
            assertEquals(2 * object, server.status().usedBytes(), "t freed chunk 1 (the first of its lookup) on both ranks");
            free(c, tokens, "u", 2 * CHUNK, 3 * CHUNK);
            assertEquals(2 * object, server.status().usedBytes(), "t still holds chunk 2: freeing chunk 1 freed nothing else");
            free(c, tokens, "t", 2 * CHUNK, 3 * CHUNK);
            assertEquals(0, server.status().usedBytes(), "t's lock on chunk 2 went last");
        }
    }

    /** A request looked up again before its count is read is one prefetch job, as LMCache counts active jobs. */
    @Test
    void aMissLookedUpTwiceIsOnePrefetchJobUntilItsCountIsRead() throws Exception {
        try (MpServer server = start(); MpTestClient c = new MpTestClient(server)) {
            int[] tokens = MpTestClient.tokens(52, CHUNK);
            byte[] key = MpTestClient.key(tokens, 0, CHUNK, "z", OptionalInt.empty(), 1);
            assertNotNull(c.call(8, key, MpScalars.encodeInt(1)));
            assertNotNull(c.call(8, key, MpScalars.encodeInt(1)));
            assertEquals(1, server.status().prefetchJobs(), "two lookups of a miss, one request");
            assertEquals(List.of(0), c.call(9, MpScalars.encodeString("z")).stream().map(b -> (int) b[0]).toList());
            assertEquals(0, server.status().prefetchJobs(), "its count was read");
        }
    }

    @Test
    void freeingTheSameChunksTwiceReleasesTheirLocksOnce() throws Exception {
        try (MpServer server = start(); MpTestClient c = new MpTestClient(server)) {
            int[] tokens = MpTestClient.tokens(51, 3 * CHUNK);
            long object = storeThreeChunks(server, c, tokens);
            assertEquals(2, lookup(c, tokens, "t", CHUNK, 3 * CHUNK));
            assertEquals(1, lookup(c, tokens, "u", 2 * CHUNK, 3 * CHUNK));
            server.clear();

            free(c, tokens, "t", 2 * CHUNK, 3 * CHUNK);
            free(c, tokens, "t", 2 * CHUNK, 3 * CHUNK); // again: t holds chunk 2 no more
            assertEquals(4 * object, server.status().usedBytes(), "u's lock on chunk 2 is intact, and t's on chunk 1");
            free(c, tokens, "u", 2 * CHUNK, 3 * CHUNK);
            assertEquals(2 * object, server.status().usedBytes(), "u's free let chunk 2 go");
            free(c, tokens, "t", CHUNK, 2 * CHUNK);
            assertEquals(0, server.status().usedBytes());
        }
    }
}
