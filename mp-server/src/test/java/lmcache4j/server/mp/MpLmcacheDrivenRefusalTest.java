package lmcache4j.server.mp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.time.Duration;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import lmcache4j.server.mp.wire.MpScalars;

/**
 * A vLLM worker left in LMCache's CUDA ({@code lmcache_driven}) mode registers with op 1, whose
 * payload carries pickled CUDA IPC handles (msgpack ext 1). This server cannot serve that mode and
 * LMCache's protocol has no error reply, so the worker's call ends at its own timeout (as with
 * LMCache's own server started for the engine-driven mode only), while the operator reads, in
 * {@code /api/status} and the metrics, which setting fixes it; everyone else is served on.
 */
@Timeout(60)
class MpLmcacheDrivenRefusalTest {

    @Test
    void aCudaWorkerIsRefusedTheStatusNamesTheSettingThatFixesItAndTheServerServesOn() throws Exception {
        try (MpServer server = MpServer.start(MpServerSettings.loopback(16L << 20).withPorts(0, -1)
                .withLifetimes(Duration.ofSeconds(600), Duration.ofSeconds(300), Duration.ZERO));
             MpTestClient worker = new MpTestClient(server)) {
            assertTrue(worker.ping(), "connected (a request sent into a handshake JeroMQ remakes can be lost)");
            assertFalse(server.status().toJson().containsKey("refusal"), "nothing to say before a CUDA worker came");
            byte[] ipcHandles = deviceIpcWrapperList();
            for (int attempt = 0; attempt < 3; attempt++) {
                assertNull(worker.callWithin(300, 1, MpScalars.encodeInt(3), ipcHandles, MpScalars.encodeString("m"),
                        MpScalars.encodeInt(1)), "register_kv_cache gets no reply: LMCache's protocol has none for errors");
            }
            assertNull(worker.callWithin(300, 6, MpScalars.encodeNil()), "nor does store (op 6)");

            MpStatus status = server.status();
            assertEquals(Map.of("register_kv_cache", 3L, "store", 1L), status.refused());
            assertEquals(4L, status.dropped().get("refused_op"), status.dropped().toString());
            Map<String, Object> json = status.toJson();
            assertEquals("engine_driven", json.get("supported_transfer_mode"));
            String refusal = (String) json.get("refusal");
            assertTrue(refusal.contains("LMCACHE_MP_TRANSFER_MODE=engine_driven"), refusal);
            assertTrue(status.prometheus().contains("lmcache4j_mp_refused_total{op=\"register_kv_cache\"} 3"),
                    status.prometheus());

            assertTrue(worker.ping(), "the same connection is served on");
            assertTrue(worker.register(7).error().isEmpty(), "and registers the engine-driven way");
        }
    }

    /** A one-element array holding msgpack ext 1 (LMCache's DeviceIPCWrapper: a pickle): op 1's second argument. */
    private static byte[] deviceIpcWrapperList() {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.write(0x91); // fixarray of 1
        byte[] pickle = {(byte) 0x80, 0x04, (byte) 0x95, 0, 0, 0, 0, 0, 0, 0, 0, 0x2e}; // protocol 4, an empty frame, STOP
        out.write(0xc7); // ext 8
        out.write(pickle.length);
        out.write(1); // ext type 1
        out.writeBytes(pickle);
        return out.toByteArray();
    }
}
