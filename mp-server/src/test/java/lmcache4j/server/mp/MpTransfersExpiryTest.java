package lmcache4j.server.mp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalInt;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import lmcache4j.server.mp.wire.MpRegistrationCodec;
import lmcache4j.server.mp.wire.MpScalars;
import lmcache4j.server.mp.wire.MpSchema;
import lmcache4j.server.mp.wire.MpTransferCodec;
import lmcache4j.server.mp.wire.RegisterEngineDrivenContextPayload;

/**
 * Prepared transfers are forgotten once older than the lock lifetime, on the housekeeping's clock
 * (driven here by hand, so the store's own clock never reaches its lapse): a store prepared that
 * long ago is never published, and a retrieve's late commit releases nothing (its lock lapsed, and
 * releasing would take another reader's). At exactly the lifetime neither has lapsed.
 */
@Timeout(60)
class MpTransfersExpiryTest {
    private static final int CHUNK = 256;
    private static final Duration TTL = Duration.ofSeconds(600);
    private static final byte[] ID = {1};
    private int uid;

    private MpService.Reply call(MpService service, long now, int op, byte[]... args) {
        List<byte[]> frames = new ArrayList<>(List.of(ID, MpScalars.encodeInt(uid++), MpScalars.encodeInt(op)));
        frames.addAll(List.of(args));
        MpService.Reply reply = service.handle(frames, now);
        assertNotNull(reply, "op " + op + " answered");
        return reply;
    }

    private static byte[] key(int seed, String requestId, OptionalInt worker) {
        int[] tokens = MpTestClient.tokens(seed, CHUNK);
        return MpTestClient.key(tokens, 0, CHUNK, requestId, worker, 1);
    }

    @Test
    void aTransferPreparedLongerThanTheLockLifetimeAgoIsForgottenAndOneExactlyThatOldIsNot() throws Exception {
        MpServerSettings settings = MpServerSettings.loopback(16L << 20).withPorts(0, -1)
                .withLifetimes(TTL, TTL, Duration.ZERO);
        try (MpService service = MpService.open(settings)) {
            long t0 = System.nanoTime();
            long ttl = TTL.toNanos();
            call(service, t0, 14, MpRegistrationCodec.encodePayload(RegisterEngineDrivenContextPayload.singleGroup(7,
                    MpTestClient.MODEL, 1, 16, 2, 64, "bfloat16", false), MpSchema.BASE));
            byte[] instance = MpScalars.encodeInt(7);
            byte[] empty = MpScalars.encodeBytes(new byte[0]);

            byte[] stored = key(70, "w", OptionalInt.of(0));
            call(service, t0, 16, stored, instance);
            call(service, t0, 17, stored, instance, empty);
            long objectBytes = service.status().usedBytes();
            byte[] scheduler = key(70, "r", OptionalInt.empty());
            call(service, t0, 8, scheduler, MpScalars.encodeInt(1)); // lookup: one read lock for request r
            byte[] read = key(70, "r", OptionalInt.of(0));
            assertTrue(MpTransferCodec.decodeRetrieve(call(service, t0, 18, read, instance).result()).success());

            byte[] exact = key(71, "w", OptionalInt.of(0));
            byte[] late = key(72, "w", OptionalInt.of(0));
            call(service, t0, 16, exact, instance);
            call(service, t0, 16, late, instance);

            service.housekeeping(t0 + ttl);
            assertArrayEquals(MpScalars.encodeBool(true), call(service, t0 + ttl, 17, exact, instance, empty).result(),
                    "a store exactly the lock lifetime old is still published");
            service.housekeeping(t0 + ttl + 1);
            assertArrayEquals(MpScalars.encodeBool(false), call(service, t0 + ttl + 1, 17, late, instance, empty).result(),
                    "a store prepared longer ago than the lock lifetime is not published");

            call(service, t0 + ttl + 1, 19, read, instance); // the late commit of the retrieve
            service.clear(true);
            assertEquals(2 * objectBytes, service.status().usedBytes(), "the stored chunk, still locked by the lookup"
                    + " (the late commit released nothing; the store has not seen the lapse yet), and the forgotten"
                    + " store's reservation, which the store lets go of at its own lapse");
        }
    }
}
