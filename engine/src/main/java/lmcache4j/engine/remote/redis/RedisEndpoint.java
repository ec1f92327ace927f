package lmcache4j.engine.remote.redis;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import io.lettuce.core.AbstractRedisClient;
import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.SslOptions;
import io.lettuce.core.TimeoutOptions;
import io.lettuce.core.api.StatefulConnection;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.cluster.ClusterClientOptions;
import io.lettuce.core.cluster.ClusterTopologyRefreshOptions;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.Delay;
import io.netty.util.concurrent.DefaultThreadFactory;

import lmcache4j.allocator.internal.threads.OwnedThreads;

/**
 * How a {@link RedisConnector} reaches Redis: one server (direct, over TLS, or found through
 * sentinels) or a Redis Cluster. Both hand out the same async command interface, so the connector's
 * operations are written once; they differ in whether two commands pipelined on one connection are
 * applied in order ({@link #ordersPipelinedCommands()}).
 */
abstract sealed class RedisEndpoint {
    private static final Duration JOIN_BOUND = Duration.ofSeconds(5);

    final ClientResources resources;
    private final OwnedThreads threads = new OwnedThreads();

    private RedisEndpoint() {
        // Two I/O threads are plenty for one connection per endpoint; the default is one per core.
        // Lettuce's pools are named lmcache4j-redis-…, made by Netty's factory (its threads keep fast thread-locals).
        this.resources = ClientResources.builder().ioThreadPoolSize(2).computationThreadPoolSize(2)
                .threadFactoryProvider(pool -> threads.recording(
                        new DefaultThreadFactory(OwnedThreads.PREFIX + pool.replace("lettuce-", "redis-"), true)))
                .reconnectDelay(Delay.exponential(Duration.ofMillis(20), Duration.ofSeconds(1), 2, TimeUnit.MILLISECONDS))
                .build();
    }

    /** A new connection (the connector keeps one and asks again only after a failed attempt). */
    abstract CompletableFuture<? extends StatefulConnection<byte[], ByteBuffer>> connect();

    /** The async commands of a connection this endpoint made. */
    abstract RedisClusterAsyncCommands<byte[], ByteBuffer> commands(StatefulConnection<byte[], ByteBuffer> connection);

    /**
     * Whether a command sent after another on one connection is applied after it. True for one
     * server; false for a cluster, whose connection routes each key to the node that owns its slot,
     * so the metadata SET must wait for the payload SET to complete.
     */
    abstract boolean ordersPipelinedCommands();

    /**
     * Which server serves {@code slot}, as a name that stays the same while the topology does: one
     * name for a single server, the master's node id for a cluster (from the slot map Lettuce keeps).
     */
    abstract String serverOfSlot(int slot);

    /** The Lettuce client behind the connections. */
    abstract AbstractRedisClient client();

    /** Shuts the client and its threads down. */
    final void shutdown() {
        try {
            client().shutdown(Duration.ZERO, Duration.ofSeconds(2));
        } catch (RuntimeException ignored) {
            // closing anyway
        }
        try {
            resources.shutdown(0, 2, TimeUnit.SECONDS).awaitUninterruptibly(3, TimeUnit.SECONDS);
        } catch (Exception ignored) {
            // closing anyway
        }
        threads.join(JOIN_BOUND); // Netty says terminated just before its threads return
    }

    /** Options both kinds share: reconnect, and reject commands at once while disconnected rather than buffer them. */
    static <B extends ClientOptions.Builder> B common(B options, Duration timeout) {
        options.autoReconnect(true)
                .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
                .timeoutOptions(TimeoutOptions.builder().fixedTimeout(timeout).build());
        return options;
    }

    /** One Redis server: {@code redis://}, {@code rediss://} or {@code redis-sentinel://}. */
    static final class Standalone extends RedisEndpoint {
        private final RedisURI uri;
        private final RedisClient client;

        Standalone(RedisURI uri, Duration timeout, Path tlsCaFile) {
            this.uri = uri;
            this.client = RedisClient.create(resources);
            ClientOptions.Builder options = common(ClientOptions.builder(), timeout);
            if (tlsCaFile != null) {
                // A private CA (the usual case for a cache server): trust it instead of the JDK's store.
                options.sslOptions(SslOptions.builder().jdkSslProvider().trustManager(tlsCaFile.toFile()).build());
            }
            client.setOptions(options.build());
        }

        @Override
        CompletableFuture<StatefulRedisConnection<byte[], ByteBuffer>> connect() {
            return client.connectAsync(RedisBytesCodec.INSTANCE, uri).toCompletableFuture();
        }

        @Override
        RedisClusterAsyncCommands<byte[], ByteBuffer> commands(StatefulConnection<byte[], ByteBuffer> connection) {
            return ((StatefulRedisConnection<byte[], ByteBuffer>) connection).async();
        }

        @Override
        boolean ordersPipelinedCommands() {
            return true;
        }

        @Override
        String serverOfSlot(int slot) {
            return "server";
        }

        @Override
        AbstractRedisClient client() {
            return client;
        }
    }

    /**
     * A Redis Cluster ({@code redis-cluster://h:p,h:p}): the seeds give the slot map, Lettuce routes
     * each key to its slot's master and follows MOVED/ASK redirects; the slot map is refreshed every
     * 30 s and at once on redirects and reconnects, so a failover or a reshard is followed.
     */
    static final class Cluster extends RedisEndpoint {
        static final Duration TOPOLOGY_REFRESH = Duration.ofSeconds(30);
        private final RedisClusterClient client;

        Cluster(List<RedisURI> seeds, Duration timeout) {
            this.client = RedisClusterClient.create(resources, seeds);
            client.setOptions(common(ClusterClientOptions.builder(), timeout)
                    .topologyRefreshOptions(ClusterTopologyRefreshOptions.builder()
                            .enablePeriodicRefresh(TOPOLOGY_REFRESH)
                            .enableAllAdaptiveRefreshTriggers()
                            .build())
                    .build());
        }

        @Override
        CompletableFuture<StatefulRedisClusterConnection<byte[], ByteBuffer>> connect() {
            // connectAsync needs the slot map already loaded (only the blocking connect loads it itself).
            return client.refreshPartitionsAsync().toCompletableFuture()
                    .thenCompose(loaded -> client.connectAsync(RedisBytesCodec.INSTANCE));
        }

        @Override
        RedisClusterAsyncCommands<byte[], ByteBuffer> commands(StatefulConnection<byte[], ByteBuffer> connection) {
            return ((StatefulRedisClusterConnection<byte[], ByteBuffer>) connection).async();
        }

        @Override
        boolean ordersPipelinedCommands() {
            return false;
        }

        @Override
        String serverOfSlot(int slot) {
            io.lettuce.core.cluster.models.partitions.RedisClusterNode node = client.getPartitions().getPartitionBySlot(slot);
            return node == null ? "unknown" : node.getNodeId();
        }

        @Override
        AbstractRedisClient client() {
            return client;
        }
    }
}
