package lmcache4j.server.mp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

import java.time.Duration;
import java.util.OptionalInt;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import lmcache4j.server.mp.wire.MpScalars;

/**
 * The status's sessions and prefetch jobs (LMCache's active jobs): a lookup's count is one job
 * until it is read or its session ends, a repeated lookup of an unread request is still one, and
 * an ended session is gone.
 */
@Timeout(60)
class MpLookupJobsTest {
    private static final int CHUNK = 256;

    @Test
    void aLookupIsOneJobUntilItsCountIsReadOrItsSessionEnds() throws Exception {
        try (MpServer server = MpServer.start(MpServerSettings.loopback(16L << 20).withPorts(0, -1)
                .withLifetimes(Duration.ofSeconds(600), Duration.ofSeconds(600), Duration.ZERO));
             MpTestClient c = new MpTestClient(server)) {
            int[] tokens = MpTestClient.tokens(60, 2 * CHUNK);
            lookup(c, tokens, "a");
            lookup(c, tokens, "a"); // again, unread: a count of 0 not yet read is still one job
            assertEquals(1, server.status().prefetchJobs(), "one unread count");
            lookup(c, tokens, "b");
            assertEquals(2, server.status().prefetchJobs());
            assertEquals(2, server.status().sessions(), "two requests, two sessions");

            assertEquals(0, MpRetrieveLocksTest.lookupHitsOf(c, "a"), "nothing is stored: a hit count of 0");
            assertEquals(1, server.status().prefetchJobs(), "a's count was read");
            assertNotNull(c.call(13, MpScalars.encodeString("b")), "end_session answered");
            assertEquals(0, server.status().prefetchJobs(), "b's session ended with its count unread");
            assertEquals(1, server.status().sessions(), "b's session is gone, a's stays");
        }
    }

    private static void lookup(MpTestClient c, int[] tokens, String requestId) {
        assertNotNull(c.call(8, MpTestClient.key(tokens, 0, tokens.length, requestId, OptionalInt.empty(), 1),
                MpScalars.encodeInt(1)), "lookup answered");
    }
}
