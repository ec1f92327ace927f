package lmcache4j.server.p2p;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.atomic.LongAdder;

import lmcache4j.allocator.MemoryObj;
import lmcache4j.engine.key.CacheKey;
import lmcache4j.engine.key.CacheKeys;
import lmcache4j.engine.p2p.P2pChecksums;
import lmcache4j.engine.remote.RemoteMetadata;
import lmcache4j.engine.storage.StorageBackend;
import lmcache4j.server.lm.LmChunkStore;

/**
 * An engine's local tiers (CPU, then disk) as an {@link LmChunkStore}, read-only, for its P2P
 * transfer server. A GET leases the tier's own object (one reference, dropped when the reply is
 * sent) and the server writes its off-heap memory to the socket: no copy. The reply header carries
 * the payload's CRC32C ({@link P2pChecksums}; computed once per stored object). PUT and REMOVE are
 * refused: peers read, only the engine writes.
 *
 * <p>A disk hit is read into the engine's CPU memory by the disk tier (as any disk read is) and
 * released after the send; the CPU tier does not keep it.
 */
public final class EngineTierStore implements LmChunkStore {
    private final List<StorageBackend> tiers;
    private final LongAdder served = new LongAdder();
    private final LongAdder servedBytes = new LongAdder();
    private final LongAdder refusedWrites = new LongAdder();
    /**
     * Checksums computed, by chunk key: the object's allocation id and its CRC32C. Allocation ids
     * are never reused and a stored object is never written again, so a cached CRC holds as long as
     * the id matches; a chunk evicted and stored again gets a new id and is summed again.
     */
    private final LinkedHashMap<String, long[]> sums = new LinkedHashMap<>(256, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, long[]> eldest) {
            return size() > MAX_CACHED_SUMS;
        }
    };
    private static final int MAX_CACHED_SUMS = 65_536;

    /** @param tiers the tiers to serve, in search order (the engine's CPU tier, then its disk tier) */
    public EngineTierStore(List<StorageBackend> tiers) {
        this.tiers = List.copyOf(tiers);
        if (this.tiers.isEmpty()) {
            throw new IllegalArgumentException("a transfer server needs at least one tier to serve");
        }
    }

    /** Chunks served, their bytes, and writes refused. */
    public record Served(long chunks, long bytes, long refusedWrites) {
    }

    public Served served() {
        return new Served(served.sum(), servedBytes.sum(), refusedWrites.sum());
    }

    @Override
    public boolean exists(String key) {
        Optional<CacheKey> parsed = parse(key);
        if (parsed.isEmpty()) {
            return false;
        }
        for (StorageBackend tier : tiers) {
            if (tier.contains(parsed.get(), false)) {
                return true;
            }
        }
        return false;
    }

    @Override
    public Optional<Lease> lease(String key) {
        Optional<CacheKey> parsed = parse(key);
        if (parsed.isEmpty()) {
            return Optional.empty();
        }
        Optional<MemoryObj> found = find(parsed.get());
        if (found.isEmpty()) {
            return Optional.empty();
        }
        MemoryObj obj = found.get();
        byte[] metadata;
        int crc;
        try {
            metadata = RemoteMetadata.forObject(obj).toBytes();
            crc = crcOf(key, obj);
        } catch (RuntimeException e) { // a dtype or size the lm:// header cannot carry: not servable
            obj.release();
            return Optional.empty();
        }
        served.increment();
        servedBytes.add(obj.byteSize());
        return Optional.of(new TierLease(metadata, obj, crc));
    }

    private int crcOf(String chunkKey, MemoryObj obj) {
        synchronized (sums) {
            long[] known = sums.get(chunkKey);
            if (known != null && known[0] == obj.id()) {
                return (int) known[1];
            }
        }
        int crc = P2pChecksums.crc32c(obj.segment().asSlice(0, obj.byteSize()));
        synchronized (sums) {
            sums.put(chunkKey, new long[] {obj.id(), crc});
        }
        return crc;
    }

    private Optional<MemoryObj> find(CacheKey key) {
        for (StorageBackend tier : tiers) {
            Optional<MemoryObj> obj = tier.getBlocking(key);
            if (obj.isPresent()) {
                return obj;
            }
        }
        return Optional.empty();
    }

    private static Optional<CacheKey> parse(String key) {
        try {
            return Optional.of(CacheKeys.parse(key));
        } catch (IllegalArgumentException e) {
            return Optional.empty(); // not a chunk key: nothing here has it
        }
    }

    /** Peers never write: the payload is read and dropped, and the PUT counts as refused. */
    @Override
    public boolean put(String key, byte[] metadata, int length, PayloadSource source) throws IOException {
        refusedWrites.increment();
        source.skip(length);
        return false;
    }

    @Override
    public boolean remove(String key) {
        refusedWrites.increment();
        return false;
    }

    /** The tiers publish their own occupancy; here, what was served. */
    @Override
    public Occupancy occupancy() {
        return new Occupancy(0, servedBytes.sum(), 0, 0, 0);
    }

    /** The tiers belong to the engine: nothing to release. */
    @Override
    public void close() {
    }

    /** A tier object held for one reply (its reference is dropped when the reply is sent) and its CRC32C. */
    private record TierLease(byte[] metadata, MemoryObj obj, int crc32c) implements Lease {
        TierLease {
            Objects.requireNonNull(obj, "obj");
        }

        @Override
        public ByteBuffer[] payload() {
            return new ByteBuffer[] {obj.segment().asSlice(0, obj.byteSize()).asByteBuffer()};
        }

        @Override
        public long length() {
            return obj.byteSize();
        }

        /** The payload's CRC32C, in the reply header's location field ({@link P2pChecksums}). */
        @Override
        public int replyLocation() {
            return crc32c;
        }

        @Override
        public void close() {
            obj.release();
        }
    }
}
