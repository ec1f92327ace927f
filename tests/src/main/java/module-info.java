/**
 * Cross-module integration, property and fault tests. The module has no main code: it exists so
 * that its tests run on the module path, against the same module graph (and the same
 * native-access grant, to {@code lmcache4j.cuda} only) that users get.
 */
module lmcache4j.tests {
    requires lmcache4j.engine;
    requires lmcache4j.server;
    requires lmcache4j.server.mp; // LMCache's multiprocess server
    requires lmcache4j.s3; // the s3:// tier: its interop, demo and module-graph tests
    // SoakTest: heap, direct-buffer and thread gauges, and the engine's log records counted instead of printed.
    requires java.management;
    requires java.logging;
    // the controller tests: its HTTP API, as a router uses it
    requires java.net.http;
    // the lookup-service tests: junk sent straight to a worker's socket
    requires org.zeromq.jeromq;
}
