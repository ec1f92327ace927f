package lmcache4j.engine.remote;

import java.lang.foreign.MemorySegment;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.function.Function;
import java.util.function.LongSupplier;

import lmcache4j.allocator.MemoryObj;
import lmcache4j.engine.key.CacheKey;

/**
 * A remote store of chunks (LMCache's {@code RemoteConnector}, spec §4.3): Redis, the {@code lm://}
 * cache server, a shared file system, or a blackhole. Every stored chunk is LMCache's 28-byte
 * {@link RemoteMetadata} plus its payload, so LMCache and lmcache4j can share one store.
 *
 * <p>All operations are asynchronous and never throw: a failure completes the future
 * exceptionally, and the remote tier turns that into a miss (gets, exists) or a dropped, counted
 * put. Implementations are thread-safe.
 */
public interface RemoteConnector extends AutoCloseable {

    /** The URL the connector was made from, for logs and metrics (credentials removed). */
    String url();

    /** Whether {@code key} is stored (its metadata is present). */
    CompletableFuture<Boolean> exists(CacheKey key);

    /**
     * Stores {@code payload} under {@code key} with {@code metadata} (payload first, then metadata,
     * so a visible metadata implies a payload). The connector reads {@code payload} until the
     * returned future completes and keeps no reference to it afterwards.
     */
    CompletableFuture<Void> put(CacheKey key, RemoteMetadata metadata, MemorySegment payload);

    /**
     * Reads {@code key}: once its metadata is known the connector asks {@code allocate} for an
     * object to read the payload into (empty = no memory, which makes the get a miss), reads
     * exactly {@code metadata.length()} bytes into it and completes with it, carrying the reference
     * {@code allocate} gave. Absent keys, a missing payload (the connector then deletes the orphan
     * metadata) and short reads complete with empty; on any failure the allocated object is released.
     */
    CompletableFuture<Optional<MemoryObj>> get(CacheKey key, Function<RemoteMetadata, Optional<MemoryObj>> allocate);

    /** Removes {@code key}; completes with whether it was stored. */
    CompletableFuture<Boolean> remove(CacheKey key);

    /**
     * The connector's own counters (corrupt objects, objects of another shape, ...), which the remote
     * tier publishes as {@code lmcache4j:remote_<name>}; none by default.
     */
    default Map<String, LongSupplier> counters() {
        return Map.of();
    }

    /** Completes normally when the store answers; used by the health monitor. */
    CompletableFuture<Void> ping();

    /** Closes connections; later calls complete exceptionally. */
    @Override
    void close();
}
