/**
 * The benchmarks (allocator, hash, store, concurrent, disk, remote, MP server, ZeroMQ libraries, and the JMH benchmarks) and the demo
 * workload: a serving-engine simulator that drives the engine end to end. A library: the
 * {@code ./lmcache4j bench} and {@code demo} commands (module {@code lmcache4j.cli}) run it; JMH
 * runs the JMH benchmarks from the class path.
 */
module lmcache4j.bench {
    requires transitive lmcache4j.server;
    requires lmcache4j.server.mp; // LMCache's multiprocess server
    requires io.netty.common; // its version, for the report
    requires io.netty.buffer; // the allocator benchmark's baseline: Netty's pooled direct allocator
    requires lettuce.core; // the remote benchmark's baseline: raw Lettuce SET/GET
    requires lmcache4j.s3; // bench s3: the S3 tier and s3proxy
    requires jdk.management; // bench s3: the client process's CPU time per byte
    // bench s3's baseline: the raw AWS SDK client (automatic modules)
    requires software.amazon.awssdk.services.s3;
    requires software.amazon.awssdk.core;
    requires java.management; // the controller benchmark reads the heap after GC (bytes per index entry)
    requires org.zeromq.jeromq; // the controller benchmark's baseline: a bare PULL socket
    requires java.logging; // the benchmarks quiet the engine's INFO logs while they measure
    requires java.net.http; // the PD demo and bench pd talk to the proxy and the roles over HTTP
    requires jdk.unsupported; // com.sun.nio.file.ExtendedOpenOption.DIRECT for the disk benchmark's raw baseline
    requires static jmh.core;
    // The model demo and bench ttft (package lmcache4j.bench.model) only: resolved when the launcher
    // adds it (--add-modules lmcache4j.jlama,jdk.incubator.vector), so no other command loads Jlama.
    requires static lmcache4j.jlama; // only JMH, from the class path, loads the JMH benchmarks

    exports lmcache4j.bench.allocator to lmcache4j.cli;
    exports lmcache4j.bench.concurrent to lmcache4j.cli;
    exports lmcache4j.bench.controller to lmcache4j.cli;
    exports lmcache4j.bench.demo to lmcache4j.cli;
    exports lmcache4j.bench.demo.cluster to lmcache4j.cli;
    exports lmcache4j.bench.disk to lmcache4j.cli;
    exports lmcache4j.bench.gpu to lmcache4j.cli;
    exports lmcache4j.bench.hash to lmcache4j.cli;
    exports lmcache4j.bench.json to lmcache4j.cli;
    exports lmcache4j.bench.model to lmcache4j.cli;
    exports lmcache4j.bench.mp to lmcache4j.cli;
    exports lmcache4j.bench.p2p to lmcache4j.cli;
    exports lmcache4j.bench.pd to lmcache4j.cli;
    exports lmcache4j.bench.remote to lmcache4j.cli;
    exports lmcache4j.bench.s3 to lmcache4j.cli;
    exports lmcache4j.bench.store to lmcache4j.cli;
    exports lmcache4j.bench.trace to lmcache4j.cli;
    exports lmcache4j.bench.zmq to lmcache4j.cli;
}
