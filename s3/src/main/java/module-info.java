/**
 * The {@code s3://} remote tier: chunks as S3 objects in LMCache's S3 naming and byte layout, over
 * the AWS SDK for Java v2 and its Netty client. A module of its own, so an engine without S3 carries
 * no SDK; the engine finds it through {@link lmcache4j.engine.remote.RemoteConnectorProvider}.
 */
module lmcache4j.s3 {
    requires lmcache4j.engine;
    // The AWS SDK's jars are automatic modules, named in their manifests.
    requires software.amazon.awssdk.services.s3;
    requires software.amazon.awssdk.core;
    requires software.amazon.awssdk.awscore;
    requires software.amazon.awssdk.auth;
    requires software.amazon.awssdk.identity.spi;
    requires software.amazon.awssdk.regions;
    requires software.amazon.awssdk.http;
    requires software.amazon.awssdk.http.nio.netty;
    requires software.amazon.awssdk.retries;
    requires software.amazon.awssdk.retries.api;
    requires org.reactivestreams; // the SDK streams response bodies as a Publisher<ByteBuffer>
    // Explicit modules the SDK's automatic modules use but cannot pull into the module graph themselves.
    requires org.slf4j; // the SDK's logging (bound to System.Logger by slf4j-jdk-platform-logging)
    requires io.netty.codec.http;
    requires io.netty.codec.http2;
    requires io.netty.handler;
    requires io.netty.transport;

    provides lmcache4j.engine.remote.RemoteConnectorProvider with lmcache4j.s3.S3ConnectorProvider;

    exports lmcache4j.s3 to lmcache4j.bench, lmcache4j.cli, lmcache4j.tests;
    exports lmcache4j.s3.proxy to lmcache4j.bench, lmcache4j.cli, lmcache4j.tests;
}
