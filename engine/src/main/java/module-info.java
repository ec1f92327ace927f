/**
 * The KV-cache engine: configuration, chunk keys and hashing, the storage tiers, the paged-KV
 * connectors and the {@code LMCacheEngine} itself.
 */
module lmcache4j.engine {
    requires transitive lmcache4j.allocator;
    requires org.agrona;
    requires HdrHistogram;
    requires org.snakeyaml.engine.v2;
    requires lettuce.core; // redis://, rediss://, redis-sentinel:// and redis-cluster:// (an automatic module; it reads whatever the graph holds)
    // Lettuce's Netty: explicit modules, which an automatic module does not pull into the graph itself.
    requires io.netty.common;
    requires io.netty.buffer; // the Redis codec writes payloads straight into Netty's outbound buffer
    requires io.netty.handler;
    requires io.netty.resolver.dns;
    requires aircompressor; // remote_serde lz4 and zstd (pure Java; an automatic module named from its jar)
    requires org.zeromq.jeromq; // the cache controller's and the lookup service's sockets (controller, lookup)
    requires jnacl; // JeroMQ's CURVE (a 'requires static' of JeroMQ): the deployment secret's encrypted sockets
    requires msgpack.core; // the controller's msgspec-format messages (an automatic module named from its jar)
    requires jdk.unsupported; // com.sun.nio.file.ExtendedOpenOption.DIRECT (O_DIRECT) for the disk tier
    requires jdk.management; // whether the JVM computes Poly1305 with its intrinsic: the payload tag a handshake prefers

    uses lmcache4j.engine.remote.RemoteConnectorProvider; // remote_url schemes served by other modules (s3://: lmcache4j.s3)

    exports lmcache4j.engine;
    exports lmcache4j.engine.config;
    exports lmcache4j.engine.controller;
    exports lmcache4j.engine.controller.message to lmcache4j.server, lmcache4j.server.mp, lmcache4j.bench, lmcache4j.tests;
    exports lmcache4j.engine.connector;
    exports lmcache4j.engine.json to lmcache4j.server, lmcache4j.server.mp, lmcache4j.bench, lmcache4j.cli, lmcache4j.tests;
    exports lmcache4j.engine.key;
    exports lmcache4j.engine.lookup to lmcache4j.server, lmcache4j.bench, lmcache4j.tests;
    exports lmcache4j.engine.metrics;
    exports lmcache4j.engine.remote;
    exports lmcache4j.engine.pd; // disaggregated prefill: the sender's push and the decoder's PD tier
    exports lmcache4j.engine.pd.wire to lmcache4j.server, lmcache4j.bench, lmcache4j.tests;
    exports lmcache4j.engine.remote.lm to lmcache4j.server, lmcache4j.bench, lmcache4j.cli, lmcache4j.tests;
    exports lmcache4j.engine.p2p to lmcache4j.server, lmcache4j.bench, lmcache4j.tests;
    exports lmcache4j.engine.remote.redis to lmcache4j.bench, lmcache4j.cli, lmcache4j.tests;
    exports lmcache4j.engine.storage;
    exports lmcache4j.engine.storage.cpu to lmcache4j.server, lmcache4j.bench, lmcache4j.tests;
    exports lmcache4j.engine.storage.disk to lmcache4j.server, lmcache4j.server.mp, lmcache4j.bench, lmcache4j.cli, lmcache4j.tests;
    // the cache_policy names (CachePolicies.NAMES) the trace replay and its commands check against
    exports lmcache4j.engine.storage.policy to lmcache4j.bench, lmcache4j.cli, lmcache4j.tests;
    exports lmcache4j.engine.security to lmcache4j.server, lmcache4j.bench, lmcache4j.cli, lmcache4j.tests;
    exports lmcache4j.engine.zmq to lmcache4j.server, lmcache4j.server.mp, lmcache4j.bench, lmcache4j.tests;
}
