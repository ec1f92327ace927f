/**
 * The processes other processes talk to over sockets, built on the engine: today the
 * {@code lm://} cache server (LMCache's wire protocol, which the engine's {@code LmConnector} and
 * LMCache's own client speak).
 */
module lmcache4j.server {
    requires transitive lmcache4j.engine;

    exports lmcache4j.server.lm;
    exports lmcache4j.server.p2p;
}
