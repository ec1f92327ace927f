package lmcache4j.tests.controller;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.util.Map;

import lmcache4j.engine.LMCacheEngine;
import lmcache4j.engine.config.LMCacheEngineConfig;
import lmcache4j.engine.connector.PagedKvCache;
import lmcache4j.server.p2p.P2pTransferServer;

/**
 * Engine A of the cross-process P2P tests, in a JVM of its own: an engine reporting to the
 * controller, its transfer server on a fixed port, and one stored prompt. Prints
 * {@code {"event":"stored",...}} and serves until stdin closes (or it is killed).
 *
 * <p>Arguments: instance pull-port reply-port p2p-port layers kv-heads head-size chunk-size chunks seed
 */
public final class P2pEngineMain {
    private P2pEngineMain() {
    }

    public static void main(String[] args) throws IOException {
        String instance = args[0];
        int pull = Integer.parseInt(args[1]);
        int reply = Integer.parseInt(args[2]);
        int p2pPort = Integer.parseInt(args[3]);
        P2pEngineSetup setup = new P2pEngineSetup(Integer.parseInt(args[4]), Integer.parseInt(args[5]),
                Integer.parseInt(args[6]), Integer.parseInt(args[7]), Integer.parseInt(args[8]));
        long seed = Long.parseLong(args[9]);
        LMCacheEngineConfig config = setup.config(instance, pull, reply, p2pPort, 5_000);
        try (LMCacheEngine engine = setup.engine(config);
             P2pTransferServer server = P2pTransferServer.start(engine, config.p2p().orElseThrow());
             Arena arena = Arena.ofShared()) {
            int[] tokens = setup.tokens(seed);
            long[] slots = setup.slots();
            PagedKvCache kv = setup.cache(arena);
            setup.fill(kv, tokens, slots);
            int stored = engine.store(tokens, null, kv, slots, Map.of());
            System.out.println("{\"event\": \"stored\", \"tokens\": " + stored + ", \"peer_init_url\": \""
                    + server.peerInitUrl() + "\"}");
            System.out.flush();
            while (System.in.read() >= 0) {
                // serve until stdin closes
            }
        }
    }
}
