package lmcache4j.server.p2p;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;
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
 * sent) and the server writes its off-heap memory to the socket: no copy. A GET of a chunk's
 * checksum key ({@link P2pChecksums}) answers the CRC32C of the bytes held now. PUT and REMOVE are
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
        Optional<CacheKey> parsed = parse(P2pChecksums.chunkKeyOf(key).orElse(key));
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
        Optional<String> checksumOf = P2pChecksums.chunkKeyOf(key);
        Optional<CacheKey> parsed = parse(checksumOf.orElse(key));
        if (parsed.isEmpty()) {
            return Optional.empty();
        }
        Optional<MemoryObj> found = find(parsed.get());
        if (found.isEmpty()) {
            return Optional.empty();
        }
        MemoryObj obj = found.get();
        if (checksumOf.isPresent()) {
            try {
                int crc = P2pChecksums.crc32c(obj.segment().asSlice(0, obj.byteSize()));
                ByteBuffer sum = ByteBuffer.allocate(P2pChecksums.BYTES).order(ByteOrder.LITTLE_ENDIAN).putInt(0, crc);
                return Optional.of(new HeapLease(P2pChecksums.metadata().toBytes(), sum));
            } finally {
                obj.release();
            }
        }
        byte[] metadata;
        try {
            metadata = RemoteMetadata.forObject(obj).toBytes();
        } catch (RuntimeException e) { // a dtype or size the lm:// header cannot carry: not servable
            obj.release();
            return Optional.empty();
        }
        served.increment();
        servedBytes.add(obj.byteSize());
        return Optional.of(new TierLease(metadata, obj));
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

    /** A tier object held for one reply: its reference is dropped when the reply is sent. */
    private record TierLease(byte[] metadata, MemoryObj obj) implements Lease {
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

        @Override
        public void close() {
            obj.release();
        }
    }

    /** A checksum: four bytes. */
    private record HeapLease(byte[] metadata, ByteBuffer bytes) implements Lease {
        @Override
        public ByteBuffer[] payload() {
            return new ByteBuffer[] {bytes.duplicate()};
        }

        @Override
        public long length() {
            return bytes.capacity();
        }

        @Override
        public void close() {
        }
    }
}
