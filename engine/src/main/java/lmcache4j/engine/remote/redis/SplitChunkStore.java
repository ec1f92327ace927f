package lmcache4j.engine.remote.redis;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.function.IntFunction;

import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import io.lettuce.core.protocol.CommandArgs;
import io.lettuce.core.protocol.CommandType;
import lmcache4j.allocator.MemoryObj;
import lmcache4j.engine.key.CacheKey;
import lmcache4j.engine.remote.RemoteMetadata;

/**
 * The {@link RedisLayout.Split split layout}'s operations, over the connector's connections.
 *
 * <p>Put: every part's SET is sent at once, part {@code i} on connection {@code i mod connections},
 * while the parts' CRC32Cs are computed on virtual threads; the manifest is SET only once every part
 * is stored, so a visible manifest implies its parts were written. A failed part leaves no manifest
 * (the parts written are deleted, best effort). Get: the manifest, then an object from
 * {@code allocate}, then every part's GET at once, each copied from Netty's receive buffer straight
 * into its slice of the object ({@link SegmentOutput}) and checked against its CRC as it arrives. A
 * damaged manifest or a part that is missing, of the wrong length or fails its CRC (stale or corrupt)
 * makes the get a miss that deletes the manifest and the parts; a failure (timeout, lost connection)
 * fails the get. Either way the object is released only after every part's output is cancelled, so
 * no late reply writes into memory that was given back.
 */
final class SplitChunkStore {
    private static final System.Logger LOG = System.getLogger(SplitChunkStore.class.getName());
    /** Part commands in flight per connection and server ({@link CommandWindow} says why so few). */
    static final int PARTS_IN_FLIGHT = 2;

    /** What reading one part found. */
    private enum PartState { OK, MISSING, WRONG_LENGTH, BAD_CRC }

    private final String url;
    private final RedisLayout.Split layout;
    private final IntFunction<CompletableFuture<RedisClusterAsyncCommands<byte[], ByteBuffer>>> connection;
    private final Executor callbacks;
    private final Duration timeout;
    private final IntFunction<String> serverOfSlot;
    /** One window per connection and server (a cluster connection talks to every master). */
    private final ConcurrentHashMap<String, CommandWindow> windows = new ConcurrentHashMap<>();

    /**
     * @param connection the async commands of connection {@code i} ({@code 0 <= i < layout.connections()})
     * @param callbacks  where checksums and callers' callbacks run (never Lettuce's event loop)
     * @param serverOfSlot which server serves a slot (any constant for one server), to keep a window per server
     */
    SplitChunkStore(String url, RedisLayout.Split layout,
                    IntFunction<CompletableFuture<RedisClusterAsyncCommands<byte[], ByteBuffer>>> connection,
                    Executor callbacks, Duration timeout, IntFunction<String> serverOfSlot) {
        this.url = url;
        this.layout = layout;
        this.connection = connection;
        this.callbacks = callbacks;
        this.timeout = timeout;
        this.serverOfSlot = serverOfSlot;
    }

    private CompletableFuture<RedisClusterAsyncCommands<byte[], ByteBuffer>> connectionFor(int part) {
        return connection.apply(part % layout.connections());
    }

    /** Part {@code i}'s command, run within the window of its connection and server, timed from when it is sent. */
    private <T> CompletableFuture<T> partCommand(CacheKey key, int i, int parts,
                                                 Function<RedisClusterAsyncCommands<byte[], ByteBuffer>, CompletableFuture<T>> command) {
        int conn = i % layout.connections();
        int slot = SplitKeys.slotOf(key.toKeyString(), i + 1, parts);
        // The server is looked up once connected: a cluster's slot map is loaded by then.
        return connection.apply(conn).thenCompose(c -> windows
                .computeIfAbsent(conn + "@" + serverOfSlot.apply(slot), k -> new CommandWindow(PARTS_IN_FLIGHT, callbacks))
                .submit(() -> command.apply(c).orTimeout(timeout.toMillis() + 1000, TimeUnit.MILLISECONDS)));
    }

    CompletableFuture<Boolean> exists(CacheKey key) {
        byte[] manifestKey = SplitKeys.manifest(key);
        return connectionFor(0).thenCompose(c -> c.exists(manifestKey).toCompletableFuture()).thenApply(n -> n != null && n > 0);
    }

    CompletableFuture<Void> put(CacheKey key, RemoteMetadata metadata, MemorySegment payload) {
        int parts = layout.partsOf(payload.byteSize());
        int partBytes = layout.partBytes();
        List<CompletableFuture<String>> sets = new ArrayList<>(parts);
        List<CompletableFuture<Integer>> crcs = new ArrayList<>(parts);
        for (int i = 0; i < parts; i++) {
            MemorySegment part = payload.asSlice((long) i * partBytes, Math.min(partBytes, payload.byteSize() - (long) i * partBytes));
            byte[] partKey = SplitKeys.part(key, i, parts);
            ByteBuffer body = part.asByteBuffer();
            sets.add(partCommand(key, i, parts, c -> c.set(partKey, body).toCompletableFuture()));
            crcs.add(CompletableFuture.supplyAsync(() -> SplitManifest.crcOf(part), callbacks));
        }
        byte[] manifestKey = SplitKeys.manifest(key);
        return CompletableFuture.allOf(sets.toArray(CompletableFuture[]::new))
                .thenCombine(CompletableFuture.allOf(crcs.toArray(CompletableFuture[]::new)), (a, b) -> {
                    int[] partCrcs = crcs.stream().mapToInt(CompletableFuture::join).toArray();
                    return ByteBuffer.wrap(new SplitManifest(metadata, partBytes, partCrcs).toBytes());
                })
                .thenCompose(manifest -> connectionFor(0).thenCompose(c -> c.set(manifestKey, manifest).toCompletableFuture()))
                .<Void>thenApply(ok -> null)
                .whenComplete((v, e) -> {
                    if (e != null) {
                        // No manifest names these parts; drop what was written rather than leave it to eviction.
                        deleteParts(key, parts, false);
                    }
                });
    }

    CompletableFuture<Optional<MemoryObj>> get(CacheKey key, Function<RemoteMetadata, Optional<MemoryObj>> allocate) {
        byte[] manifestKey = SplitKeys.manifest(key);
        return connectionFor(0).thenCompose(c -> c.get(manifestKey).toCompletableFuture()).thenComposeAsync(raw -> {
            if (raw == null) {
                return CompletableFuture.completedFuture(Optional.<MemoryObj>empty());
            }
            SplitManifest manifest;
            try {
                manifest = SplitManifest.decode(raw);
            } catch (IllegalArgumentException e) {
                OptionalInt parts = SplitManifest.partCountIn(raw);
                LOG.log(System.Logger.Level.WARNING, () -> "redis " + url + ": the manifest of " + key.toKeyString()
                        + " is unusable (" + e.getMessage() + "); deleted" + (parts.isPresent() ? " with its "
                        + parts.getAsInt() + " parts" : "") + ", served as a miss");
                return miss(key, parts.orElse(0), true);
            }
            Optional<MemoryObj> obj = allocate.apply(manifest.metadata());
            if (obj.isEmpty() || obj.get().byteSize() < manifest.metadata().length()) {
                obj.ifPresent(MemoryObj::release);
                return CompletableFuture.completedFuture(Optional.<MemoryObj>empty());
            }
            return readParts(key, manifest, obj.get());
        }, callbacks);
    }

    private CompletableFuture<Optional<MemoryObj>> readParts(CacheKey key, SplitManifest manifest, MemoryObj obj) {
        int parts = manifest.parts();
        MemorySegment payload = obj.segment().asSlice(0, manifest.metadata().length());
        SegmentOutput[] outputs = new SegmentOutput[parts];
        List<CompletableFuture<PartState>> reads = new ArrayList<>(parts);
        for (int i = 0; i < parts; i++) {
            MemorySegment slice = manifest.slice(payload, i);
            SegmentOutput out = new SegmentOutput(slice);
            outputs[i] = out;
            byte[] partKey = SplitKeys.part(key, i, parts);
            int expectedCrc = manifest.partCrcs()[i];
            reads.add(partCommand(key, i, parts, c -> c.dispatch(CommandType.GET, out,
                            new CommandArgs<>(RedisBytesCodec.INSTANCE).addKey(partKey)).toCompletableFuture())
                    .thenApplyAsync(n -> n == SegmentOutput.ABSENT ? PartState.MISSING
                            : n != slice.byteSize() ? PartState.WRONG_LENGTH
                            : SplitManifest.crcOf(slice) != expectedCrc ? PartState.BAD_CRC : PartState.OK, callbacks));
        }
        // allOf completes once every read has, so nothing is still being written when the object is released.
        return CompletableFuture.allOf(reads.toArray(CompletableFuture[]::new)).handleAsync((v, e) -> {
            if (e == null && reads.stream().allMatch(r -> r.join() == PartState.OK)) {
                return CompletableFuture.completedFuture(Optional.of(obj));
            }
            for (SegmentOutput out : outputs) {
                out.cancel(); // after this no late reply writes into the object
            }
            obj.release();
            if (e != null) {
                return CompletableFuture.<Optional<MemoryObj>>failedFuture(
                        e instanceof CompletionException && e.getCause() != null ? e.getCause() : e);
            }
            List<String> bad = new ArrayList<>();
            for (int i = 0; i < parts; i++) {
                PartState s = reads.get(i).join();
                if (s != PartState.OK) {
                    bad.add("part " + i + " " + s.name().toLowerCase(Locale.ROOT).replace('_', ' '));
                }
            }
            LOG.log(System.Logger.Level.WARNING, () -> "redis " + url + ": " + key.toKeyString() + " has " + bad
                    + " of " + parts + " (missing, stale or corrupt); deleted, served as a miss");
            return miss(key, parts, true);
        }, callbacks).thenCompose(Function.identity());
    }

    CompletableFuture<Boolean> remove(CacheKey key) {
        byte[] manifestKey = SplitKeys.manifest(key);
        return connectionFor(0).thenCompose(c -> c.get(manifestKey).toCompletableFuture()).thenCompose(raw -> raw == null
                ? CompletableFuture.completedFuture(false)
                : deleteParts(key, SplitManifest.partCountIn(raw).orElse(0), true).thenApply(n -> n > 0));
    }

    /** A miss after deleting the manifest and its {@code parts} parts (a failed delete is still a miss). */
    private CompletableFuture<Optional<MemoryObj>> miss(CacheKey key, int parts, boolean withManifest) {
        return deleteParts(key, parts, withManifest).handle((n, e) -> Optional.empty());
    }

    /** DEL of the {@code parts} parts (and the manifest); completes with the number of keys deleted. */
    private CompletableFuture<Long> deleteParts(CacheKey key, int parts, boolean withManifest) {
        byte[][] keys = new byte[parts + (withManifest ? 1 : 0)][];
        for (int i = 0; i < parts; i++) {
            keys[i] = SplitKeys.part(key, i, parts);
        }
        if (withManifest) {
            keys[parts] = SplitKeys.manifest(key);
        }
        if (keys.length == 0) {
            return CompletableFuture.completedFuture(0L);
        }
        return connectionFor(0).thenCompose(c -> c.del(keys).toCompletableFuture());
    }
}
