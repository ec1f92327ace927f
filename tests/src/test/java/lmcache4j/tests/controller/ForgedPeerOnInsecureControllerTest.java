package lmcache4j.tests.controller;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;

import lmcache4j.engine.LMCacheEngine;
import lmcache4j.engine.config.LMCacheEngineConfig;
import lmcache4j.engine.connector.PagedKvCache;
import lmcache4j.engine.p2p.P2pBackend;
import lmcache4j.server.lm.LmServerLimits;
import lmcache4j.server.p2p.P2pTransferServer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The forged-peer attack against a controller started with {@code --insecure} (which LMCache's
 * Python workers need: they cannot speak CurveZMQ). An outsider registers with it as a P2P peer,
 * stores its own bytes under the victim's prompt, so the controller names it as the prompt's
 * holder, and serves them. The victim's engine holds the deployment's P2P token and the outsider
 * does not: whether the outsider's transfer server demands a token of its own making or none at
 * all, the victim looks up nothing, retrieves nothing and writes zero bytes into its KV cache.
 */
@Timeout(180)
class ForgedPeerOnInsecureControllerTest {
    private static final Duration WAIT = Duration.ofSeconds(60);
    private static final String OUTSIDERS_TOKEN = "made-up-by-the-outsider-itself";

    @TempDir
    Path tmp;

    @Test
    void anOutsiderWithATokenOfItsOwnServesNothing() throws Exception {
        attack(true, 2101);
    }

    @Test
    void anOutsiderWhoseTransferServerAsksForNoTokenServesNothing() throws Exception {
        attack(false, 2102);
    }

    private void attack(boolean outsiderDemandsItsOwnToken, long seed) throws Exception {
        P2pEngineSetup setup = new P2pEngineSetup(2, 2, 16, 64, 4);
        ControllerProcess.Ports ports = ControllerProcess.Ports.free();
        int[] p2p = FreePorts.take(2);
        int[] tokens = setup.tokens(seed);
        long[] slots = setup.slots();
        LMCacheEngineConfig outsiderConfig = setup.config("outsider", ports.pull(), ports.reply(), p2p[0], 5_000,
                OUTSIDERS_TOKEN);
        try (ControllerProcess controller = ControllerProcess.start("controller", ports, setup.chunkSize(),
                Duration.ofSeconds(30), tmp); // --insecure: anyone on the network may register
             Arena arena = Arena.ofShared();
             LMCacheEngine outsider = setup.engine(outsiderConfig);
             P2pTransferServer forged = P2pTransferServer.start(outsider, "127.0.0.1", p2p[0],
                     outsiderDemandsItsOwnToken ? Optional.of(OUTSIDERS_TOKEN) : Optional.empty(), LmServerLimits.defaults());
             LMCacheEngine victim = setup.engine(setup.config("victim", ports.pull(), ports.reply(), p2p[1], 2_000))) {
            PagedKvCache lies = setup.cache(arena);
            fillWithOtherBytes(lies);
            assertEquals(setup.tokenCount(), outsider.store(tokens, null, lies, slots, Map.of()));
            controller.http().awaitLookup(tokens, a -> ControllerHttp.tokensOf(a, "outsider") == setup.tokenCount(), WAIT,
                    "the controller names the outsider as the prompt's holder");

            // The controller's word is all the victim has before it connects: the first lookup may count the
            // claim. The retrieve is where the outsider must prove it holds the token, and cannot.
            victim.lookup(tokens, Map.of(), "request-1");
            PagedKvCache target = setup.cache(arena); // zeroed: any byte written into it came from a peer
            boolean[] loaded = victim.retrieve(tokens, null, target, slots, Map.of(), "request-1");
            assertFalse(loaded[0], "nothing retrieved from the outsider");
            for (MemorySegment layer : target.layers()) {
                assertEquals(-1, layer.mismatch(arena.allocate(layer.byteSize())), "zero bytes written into the KV cache");
            }
            P2pBackend.Stats stats = ((P2pBackend) victim.storage().tier(P2pBackend.NAME).orElseThrow()).stats();
            assertTrue(stats.fetches() > 0, "the victim did try the peer the controller named: " + stats);
            assertEquals(0, stats.hits(), "no chunk of the outsider's was taken: " + stats);
            assertEquals(1, stats.unprovenPeers(), "the outsider is set aside: " + stats);
            assertEquals(0, forged.served().chunks(), "the outsider served no chunk");
            // Set aside, its claims no longer count: later requests are not promised KV that cannot come.
            assertEquals(0, victim.lookup(tokens, Map.of(), null), "the controller still names the outsider; the victim no longer believes it");
        }
    }

    /** Bytes no honest peer would hold for these tokens: what the outsider wants the victim to compute with. */
    private static void fillWithOtherBytes(PagedKvCache kv) {
        for (MemorySegment layer : kv.layers()) {
            for (long o = 0; o < layer.byteSize(); o += 8) {
                layer.set(ValueLayout.JAVA_LONG, o, 0x0BADC0DE0BADC0DEL ^ o);
            }
        }
    }
}
