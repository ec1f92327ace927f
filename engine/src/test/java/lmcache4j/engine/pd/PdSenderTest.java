package lmcache4j.engine.pd;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.util.List;
import java.util.Map;
import java.util.Random;

import org.junit.jupiter.api.Test;

import lmcache4j.allocator.DType;
import lmcache4j.engine.LMCacheEngine;
import lmcache4j.engine.ModelMetadata;
import lmcache4j.engine.PreparedRequest;
import lmcache4j.engine.config.ConfigLoader;
import lmcache4j.engine.connector.KvConnector;
import lmcache4j.engine.pd.wire.PdReceiveServer;

/**
 * The sender's public face, as an embedder uses it: made from a sender's engine only (a receiver's,
 * a non-PD engine, a staging buffer without room for one chunk are refused naming the setting), a
 * request id of 1 to 256 characters, a receiver's ports in range; and a request pushed through it
 * lands in a receiver's tier byte for byte, counted in its stats.
 */
class PdSenderTest {
    private static final String TOKEN = "pd-sender-test-token-0123456789";
    private static final int CHUNK = 32;
    private static final ModelMetadata MODEL = new ModelMetadata("pd/sender", 1, 0, DType.FLOAT32, 2, 2, 8, false);

    private static LMCacheEngine engine(String role, double bufferBytes) {
        return engine(role, bufferBytes, MODEL);
    }

    private static LMCacheEngine engine(String role, double bufferBytes, ModelMetadata model) {
        return LMCacheEngine.create(ConfigLoader.builder().environment(Map.of()).set("chunk_size", CHUNK)
                .set("max_local_cpu_size", 0.02).set("hash_seed", "0").set("enable_pd", true).set("pd_role", role)
                .set("pd_buffer_size", bufferBytes).set("pd_buffer_device", "cpu").set("pd_peer_host", "127.0.0.1")
                .set("pd_peer_init_port", List.of(0)).set("pd_peer_alloc_port", List.of(0))
                .set("extra_config", Map.of("p2p_token", TOKEN, "pd_timeout_ms", 5_000)).build(), model,
                KvConnector.host(1), List.of());
    }

    @Test
    void onlyASendersEngineWithRoomForAChunkMakesASender() {
        try (LMCacheEngine receiver = engine("receiver", 1 << 20)) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> PdSender.create(receiver));
            assertTrue(e.getMessage().contains("pd_role: sender"), e.getMessage());
        }
        try (LMCacheEngine plain = LMCacheEngine.create(ConfigLoader.builder().environment(Map.of()).set("chunk_size", CHUNK)
                .set("max_local_cpu_size", 0.02).build(), MODEL, KvConnector.host(1), List.of())) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> PdSender.create(plain));
            assertTrue(e.getMessage().contains("enable_pd"), e.getMessage());
        }
        ModelMetadata wide = new ModelMetadata("pd/wide", 1, 0, DType.FLOAT32, 8, 8, 128, false); // 2 MiB chunks
        long wideChunk = wide.chunkBytes(CHUNK);
        assertEquals(2 << 20, wideChunk);
        try (LMCacheEngine small = engine("sender", wideChunk - 1, wide)) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> PdSender.create(small));
            assertTrue(e.getMessage().contains("pd_buffer_size " + (wideChunk - 1)), e.getMessage());
        }
        try (LMCacheEngine exact = engine("sender", wideChunk, wide); PdSender sender = PdSender.create(exact)) {
            assertEquals(0, sender.stats().pushedChunks()); // one chunk's room is enough
        }
    }

    @Test
    void aRequestIdAndAReceiverAreChecked() {
        try (LMCacheEngine e = engine("sender", 1 << 20); PdSender sender = PdSender.create(e)) {
            PreparedRequest r = e.prepare(new int[] {1, 2, 3}, Map.of());
            PdPeer peer = new PdPeer("127.0.0.1", 1, 65535);
            assertThrows(IllegalArgumentException.class, () -> sender.begin(" ", r, peer));
            assertThrows(IllegalArgumentException.class, () -> sender.begin("", r, peer));
            assertThrows(IllegalArgumentException.class, () -> sender.begin("x".repeat(257), r, peer));
            assertEquals("x".repeat(256), sender.begin("x".repeat(256), r, peer).requestId());
        }
        for (int[] ports : new int[][] {{0, 1}, {1, 0}, {65536, 1}, {1, 65536}}) {
            assertThrows(IllegalArgumentException.class, () -> new PdPeer("h", ports[0], ports[1]));
        }
        assertThrows(IllegalArgumentException.class, () -> new PdPeer("", 1, 1));
        assertEquals("h:1/65535", new PdPeer("h", 1, 65535).toString());
        assertEquals("h:65535/1", new PdPeer("h", 65535, 1).toString(), "both ends of the range, either way round");
    }

    @Test
    void aRequestPushedThroughItLandsByteForByteAndIsCounted() throws Exception {
        int positions = 2 * CHUNK + 5;
        try (Arena arena = Arena.ofShared(); LMCacheEngine decoder = engine("receiver", 1 << 20);
             PdReceiveServer server = PdReceiveServer.start(decoder); LMCacheEngine prefiller = engine("sender", 1 << 20);
             PdSender sender = PdSender.create(prefiller)) {
            int[] tokens = new Random(3).ints(positions, 0, 30_000).toArray();
            PlanarKv kv = new PlanarKv(arena, MODEL, positions, 4);
            PdTransfer t = sender.begin("req", prefiller.prepare(tokens, Map.of()),
                    new PdPeer("127.0.0.1", server.initPort(), server.allocPort()));
            t.pushComputed(kv, CHUNK); // the first chunk as soon as its positions are computed
            t.pushComputed(kv, positions);
            PdTransfer.Result r = t.finish();
            assertEquals(3, r.pushedChunks(), r.toString());
            assertEquals(kv.all.byteSize(), r.pushedBytes());
            assertEquals(3, sender.stats().pushedChunks());
            assertEquals(0, sender.stats().stagingUsedBytes(), "staging given back");
            PreparedRequest request = decoder.prepare(tokens, Map.of());
            assertEquals(positions, decoder.lookup(request, "l"));
            PlanarKv into = new PlanarKv(arena, MODEL, positions, 0);
            for (boolean loaded : decoder.retrieve(request, into, "l")) {
                assertTrue(loaded);
            }
            assertEquals(-1, into.all.mismatch(kv.all));
            sender.close();
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> sender.begin("after",
                    prefiller.prepare(tokens, Map.of()), new PdPeer("127.0.0.1", server.initPort(), server.allocPort())));
            assertTrue(e.getMessage().contains("closed"), e.getMessage());
            assertEquals(3, sender.stats().pushedChunks(), "its counters outlive it");
        }
    }
}
