/**
 * The processes other processes talk to over sockets, built on the engine: the {@code lm://}
 * cache server (LMCache's wire protocol, which the engine's {@code LmConnector} and LMCache's own
 * client speak), the lookup server a worker runs for the scheduler, the P2P transfer server, the
 * cache controller (LMCache's controller protocol: the cluster-wide chunk index, KV-aware lookup,
 * and control of every engine, with an HTTP JSON API) and the KV-aware router over it. LMCache's
 * multiprocess server has a module of its own, {@code lmcache4j.server.mp}.
 */
module lmcache4j.server {
    requires transitive lmcache4j.engine;
    requires org.agrona; // the controller index's reverse sets (LongHashSet)
    requires org.zeromq.jeromq; // the controller's PULL, ROUTER and REQ sockets; the lookup server's PULL and PUSH
    requires java.net.http; // the KV-aware router's client of a controller's HTTP /lookup
    requires jdk.httpserver; // the controller's HTTP API (and the MP server's, through server.http): the JDK's own server, which a GraalVM native image supports

    exports lmcache4j.server.lm;
    exports lmcache4j.server.lookup to lmcache4j.bench, lmcache4j.tests;
    exports lmcache4j.server.controller;
    exports lmcache4j.server.controller.index to lmcache4j.bench;
    exports lmcache4j.server.controller.internal to lmcache4j.bench;
    exports lmcache4j.server.controller.net to lmcache4j.bench, lmcache4j.cli;
    exports lmcache4j.server.controller.registry to lmcache4j.bench;
    exports lmcache4j.server.p2p to lmcache4j.bench, lmcache4j.tests;
    // disaggregated prefill: the decoder's PD ports, the role processes' HTTP face and the proxy
    exports lmcache4j.server.pd to lmcache4j.cli, lmcache4j.bench, lmcache4j.tests;
    exports lmcache4j.server.router;
    // the JSON-over-HTTP server and the bind failure, shared with the MP server's module
    exports lmcache4j.server.http to lmcache4j.server.mp;
    exports lmcache4j.server.net to lmcache4j.cli, lmcache4j.tests, lmcache4j.server.mp;
}
