package lmcache4j.engine.remote.fs;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.Function;

import lmcache4j.allocator.MemoryObj;
import lmcache4j.allocator.internal.threads.OwnedThreads;
import lmcache4j.engine.key.CacheKey;
import lmcache4j.engine.remote.RemoteConnector;
import lmcache4j.engine.remote.RemoteMetadata;

/**
 * {@code fs://} as a remote connector: LMCache's FS-connector files ({@link FsChunkStore}) on a
 * shared file system, with the blocking file I/O on a few threads of its own.
 */
public final class FsConnector implements RemoteConnector {
    private static final Duration JOIN_BOUND = Duration.ofSeconds(10);

    private final String url;
    private final FsChunkStore store;
    private final OwnedThreads ioThreads = new OwnedThreads();
    private final ExecutorService io;

    public FsConnector(String url, FsChunkStore store, int threads) {
        this.url = url;
        this.store = store;
        this.io = Executors.newFixedThreadPool(threads, ioThreads.platformFactory("fs-io"));
    }

    /** A connector for {@code fs://[host:port]/path[,path...]}. */
    public static FsConnector open(String url) throws IOException {
        return new FsConnector(url, FsChunkStore.fromUrl(url), 4);
    }

    @Override
    public String url() {
        return url;
    }

    @Override
    public CompletableFuture<Boolean> exists(CacheKey key) {
        return CompletableFuture.supplyAsync(() -> store.exists(key), io);
    }

    @Override
    public CompletableFuture<Void> put(CacheKey key, RemoteMetadata metadata, MemorySegment payload) {
        return CompletableFuture.runAsync(() -> {
            try {
                store.put(key, metadata, payload);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }, io);
    }

    @Override
    public CompletableFuture<Optional<MemoryObj>> get(CacheKey key, Function<RemoteMetadata, Optional<MemoryObj>> allocate) {
        return CompletableFuture.supplyAsync(() -> {
            MemoryObj obj = null;
            try {
                Optional<RemoteMetadata> metadata = store.readMetadata(key);
                if (metadata.isEmpty()) {
                    return Optional.empty();
                }
                Optional<MemoryObj> allocated = allocate.apply(metadata.get());
                if (allocated.isEmpty()) {
                    return Optional.empty();
                }
                obj = allocated.get();
                if (store.get(key, metadata.get(), obj)) {
                    MemoryObj done = obj;
                    obj = null;
                    return Optional.of(done);
                }
                return Optional.empty();
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            } finally {
                if (obj != null) {
                    obj.release();
                }
            }
        }, io);
    }

    @Override
    public CompletableFuture<Boolean> remove(CacheKey key) {
        return CompletableFuture.supplyAsync(() -> {
            try {
                return store.remove(key);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }, io);
    }

    @Override
    public CompletableFuture<Void> ping() {
        return CompletableFuture.runAsync(() -> {
            for (var base : store.basePaths()) {
                if (!Files.isDirectory(base) || !Files.isWritable(base)) {
                    throw new IllegalStateException(base + " is not a writable directory");
                }
            }
        }, io);
    }

    @Override
    public void close() {
        io.shutdown(); // operations queued still run: their callers wait for them
        ioThreads.join(JOIN_BOUND);
    }
}
