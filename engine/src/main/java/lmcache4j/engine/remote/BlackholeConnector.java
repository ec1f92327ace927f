package lmcache4j.engine.remote;

import java.lang.foreign.MemorySegment;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.function.Function;

import lmcache4j.allocator.MemoryObj;
import lmcache4j.engine.key.CacheKey;

/**
 * {@code blackhole://}: stores nothing, finds nothing, always answers. Stands in for an unhealthy
 * remote (LMCache's {@code BlackholeConnector}) so the tier keeps working on the local tiers.
 */
public final class BlackholeConnector implements RemoteConnector {
    private final String url;

    public BlackholeConnector(String url) {
        this.url = url;
    }

    @Override
    public String url() {
        return url;
    }

    @Override
    public CompletableFuture<Boolean> exists(CacheKey key) {
        return CompletableFuture.completedFuture(false);
    }

    @Override
    public CompletableFuture<Void> put(CacheKey key, RemoteMetadata metadata, MemorySegment payload) {
        return CompletableFuture.completedFuture(null);
    }

    @Override
    public CompletableFuture<Optional<MemoryObj>> get(CacheKey key, Function<RemoteMetadata, Optional<MemoryObj>> allocate) {
        return CompletableFuture.completedFuture(Optional.empty());
    }

    @Override
    public CompletableFuture<Boolean> remove(CacheKey key) {
        return CompletableFuture.completedFuture(false);
    }

    @Override
    public CompletableFuture<Void> ping() {
        return CompletableFuture.completedFuture(null);
    }

    @Override
    public void close() {
    }
}
