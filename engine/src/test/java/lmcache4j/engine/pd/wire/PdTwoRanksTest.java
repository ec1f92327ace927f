package lmcache4j.engine.pd.wire;

import static lmcache4j.engine.pd.wire.PdReceiveServerTest.CHUNK;
import static lmcache4j.engine.pd.wire.PdReceiveServerTest.CHUNK_BYTES;
import static lmcache4j.engine.pd.wire.PdReceiveServerTest.TIMEOUT;
import static lmcache4j.engine.pd.wire.PdReceiveServerTest.TOKEN;
import static lmcache4j.engine.pd.wire.PdReceiveServerTest.tier;
import static lmcache4j.engine.pd.wire.PdReceiveServerTest.tokens;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import org.junit.jupiter.api.Test;

import lmcache4j.allocator.DType;
import lmcache4j.allocator.tensor.TensorMemoryAllocator;
import lmcache4j.engine.LMCacheEngine;
import lmcache4j.engine.ModelMetadata;
import lmcache4j.engine.PreparedRequest;
import lmcache4j.engine.config.ConfigLoader;
import lmcache4j.engine.connector.KvConnector;
import lmcache4j.engine.pd.PlanarKv;

/**
 * Two tensor-parallel ranks, as a deployment of two workers runs them: each decoder rank binds its
 * own entry of {@code pd_peer_init_port} and {@code pd_peer_alloc_port}, each prefiller rank pushes
 * its own slice of the KV to the decoder rank of the same number, and each decoder serves its own
 * rank's bytes; a rank that pushes to the other rank's ports (a swapped port list) is refused whole,
 * and nothing of it is held.
 */
class PdTwoRanksTest {
    private static final Duration BOUND = Duration.ofSeconds(20);

    private static ModelMetadata rank(int r) {
        return new ModelMetadata("pd/test", 2, r, DType.FLOAT32, 2, 2, 16, false);
    }

    private static LMCacheEngine decoder(int r, List<Integer> initPorts, List<Integer> allocPorts) {
        return LMCacheEngine.create(ConfigLoader.builder().environment(Map.of()).set("chunk_size", CHUNK)
                .set("max_local_cpu_size", 0.02).set("hash_seed", "0").set("enable_pd", true).set("pd_role", "receiver")
                .set("pd_buffer_size", (double) (1 << 20)).set("pd_buffer_device", "cpu").set("pd_peer_host", "127.0.0.1")
                .set("pd_peer_init_port", initPorts).set("pd_peer_alloc_port", allocPorts)
                .set("extra_config", Map.of("p2p_token", TOKEN, "pd_timeout_ms", (int) TIMEOUT.toMillis())).build(),
                rank(r), KvConnector.host(1), List.of());
    }

    private static PdPusher pusher(int r) {
        return new PdPusher(TensorMemoryAllocator.strict("staging", 16 * CHUNK_BYTES, 4096), rank(r), CHUNK,
                Optional.of(TOKEN.getBytes(StandardCharsets.UTF_8)), TIMEOUT, Optional.empty(), 0);
    }

    /** Four ports free now (bound and let go: a test run's other servers take ephemeral ones, not these). */
    private static List<Integer> freePorts() throws IOException {
        List<ServerSocket> held = new ArrayList<>();
        try {
            List<Integer> ports = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
                held.add(s);
                ports.add(s.getLocalPort());
            }
            return ports;
        } finally {
            for (ServerSocket s : held) {
                s.close();
            }
        }
    }

    @Test
    void eachRankPushesItsOwnSliceToTheDecoderRankOfItsNumberAndACrossedPushIsRefused() throws Exception {
        for (int attempt = 1; ; attempt++) {
            try {
                twoRanks(freePorts());
                return;
            } catch (IOException e) { // another test took one of the four ports in between: the cause is a BindException
                if (!(e.getCause() instanceof java.net.BindException) || attempt == 3) {
                    throw e;
                }
            }
        }
    }

    private static void twoRanks(List<Integer> ports) throws Exception {
        List<Integer> init = List.of(ports.get(0), ports.get(1));
        List<Integer> alloc = List.of(ports.get(2), ports.get(3));
        int[] tokens = tokens(3 * CHUNK, 301);
        try (Arena arena = Arena.ofShared();
             LMCacheEngine d0 = decoder(0, init, alloc); LMCacheEngine d1 = decoder(1, init, alloc);
             PdReceiveServer s0 = PdReceiveServer.start(d0); PdReceiveServer s1 = PdReceiveServer.start(d1);
             PdPusher p0 = pusher(0); PdPusher p1 = pusher(1)) {
            assertEquals(List.of(init.get(0), alloc.get(0)), List.of(s0.initPort(), s0.allocPort()), "rank 0's entries");
            assertEquals(List.of(init.get(1), alloc.get(1)), List.of(s1.initPort(), s1.allocPort()), "rank 1's entries");
            List<LMCacheEngine> decoders = List.of(d0, d1);
            List<PdReceiveServer> servers = List.of(s0, s1);
            List<PdPusher> pushers = List.of(p0, p1);
            List<PlanarKv> slices = List.of(new PlanarKv(arena, rank(0), tokens.length, 302),
                    new PlanarKv(arena, rank(1), tokens.length, 303));
            for (int r = 0; r < 2; r++) {
                PreparedRequest keys = decoders.get(r).prepare(tokens, Map.of());
                PdPusher.Transfer t = pushers.get(r).begin("rank-" + r, keys.chunks(), new PdPusher.Peer("127.0.0.1",
                        servers.get(r).initPort(), servers.get(r).allocPort()));
                t.pushComputed(slices.get(r), tokens.length);
                assertEquals(3, assertTimeoutPreemptively(BOUND, t::finish).pushedChunks());
            }
            for (int r = 0; r < 2; r++) {
                PreparedRequest again = decoders.get(r).prepare(tokens, Map.of());
                assertEquals(tokens.length, decoders.get(r).lookup(again, "r" + r));
                PlanarKv out = new PlanarKv(arena, rank(r), tokens.length, 0);
                decoders.get(r).retrieve(again, out, "r" + r);
                assertArrayEquals(slices.get(r).bytes(tokens.length), out.bytes(tokens.length), "rank " + r + "'s own slice");
            }
            assertFalse(java.util.Arrays.equals(slices.get(0).bytes(CHUNK), slices.get(1).bytes(CHUNK)));

            // rank 0's prefiller given rank 1's ports: its keys name worker 0, which decoder 1 does not hold
            int[] other = tokens(2 * CHUNK, 304);
            PdPusher.Transfer crossed = p0.begin("crossed", d0.prepare(other, Map.of()).chunks(),
                    new PdPusher.Peer("127.0.0.1", s1.initPort(), s1.allocPort()));
            crossed.pushComputed(slices.get(0), other.length);
            PdPusher.Result r = assertTimeoutPreemptively(BOUND, crossed::finish);
            assertEquals(0, r.pushedChunks(), r.toString());
            // refused with its batch; a chunk queued after the refusal is dropped with the stopped request
            assertTrue(r.refusedChunks() >= 1 && r.refusedChunks() + r.failedChunks() == 2, r.toString());
            String why = r.stopReason().orElse("");
            assertTrue(why.contains("not of this decoder's model and worker") && why.contains("pd/test@2@1"), why);
            assertEquals(1, tier(d1).stats().refusedRequests());
            assertEquals(3, tier(d1).stats().landedChunks(), "only rank 1's own chunks ever landed");
            assertEquals(0, tier(d1).stats().heldChunks(), "no room held for the crossed push (rank 1's own were retrieved)");
        }
    }
}
