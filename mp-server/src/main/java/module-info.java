/**
 * LMCache's multiprocess (MP) server: the process that vLLM's LMCache MP connector talks to over
 * ZeroMQ, holding KV in a shared-memory pool with disk and remote tiers behind it. Its loop and
 * operations ({@code lmcache4j.server.mp}), LMCache's msgpack frames and BLAKE3 token chain
 * ({@code .wire}), the pool's objects, locks and reservations ({@code .store}) and the lower tiers
 * ({@code .tier}). A module of its own so that a deployment's processes read off the module graph.
 */
module lmcache4j.server.mp {
    requires transitive lmcache4j.engine;
    requires lmcache4j.server; // the JSON-over-HTTP server (server.http) and the bind failure (server.net)
    requires org.zeromq.jeromq; // the ROUTER socket vLLM's MP connector connects to
    requires msgpack.core; // the frames (LMCache's msgspec msgpack; an automatic module named from its jar)
    requires org.bouncycastle.provider; // BLAKE3 (Blake3Digest) for the token-chunk hash chain
    requires jdk.httpserver; // the HTTP API, on the JDK's own server

    // the server: run by the CLI's mp-server command, benchmarked, driven by the tests
    exports lmcache4j.server.mp to lmcache4j.cli, lmcache4j.bench, lmcache4j.tests;
    // its frames, for the MP benchmark's client, which speaks them as LMCache's msgspec client does
    exports lmcache4j.server.mp.wire to lmcache4j.bench;
}
