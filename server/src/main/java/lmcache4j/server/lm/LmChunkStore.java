package lmcache4j.server.lm;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Optional;

/**
 * What an {@link LmCacheServer} serves: the chunks behind its GET, EXIST, PUT and REMOVE. The server
 * owns the sockets, the frames, authentication and every limit on what a client may send; a store
 * owns the bytes. {@link PagedChunkStore} is the cache server's own LRU pool; a store may also expose
 * memory someone else owns (an engine's tiers, served read-only to its peers).
 *
 * <p>Implementations are thread-safe: every connection calls them from its own thread.
 */
public interface LmChunkStore extends AutoCloseable {

    /** Where a PUT's payload comes from: the connection, read as the store takes memory for it. */
    interface PayloadSource {
        /** Fills {@code dst} from the connection; throws when the connection ends first. */
        void readFully(ByteBuffer dst) throws IOException;

        /** Reads and drops {@code bytes} bytes, keeping the stream in step with the frames. */
        void skip(long bytes) throws IOException;
    }

    /**
     * A stored chunk held for one GET reply: its 28 metadata bytes and its payload as off-heap
     * buffers (no copy). The store keeps the memory alive until {@link #close()}, whatever is
     * evicted or replaced meanwhile.
     */
    interface Lease extends AutoCloseable {
        /** LMCache's 28 metadata bytes (length, fmt, dtype, shape). */
        byte[] metadata();

        /** The payload, exactly {@link #length()} bytes over all buffers. */
        ByteBuffer[] payload();

        /** Payload bytes. */
        long length();

        /**
         * The reply header's last field ({@code location}): 0 as LMCache's server sends it, unless
         * the store gives it a meaning (the P2P transfer store: the payload's CRC32C).
         */
        default int replyLocation() {
            return 0;
        }

        /** Gives the memory back to the store. Called exactly once. */
        @Override
        void close();
    }

    /** Occupancy and eviction counts, for the server's {@link LmCacheServer.Stats}. */
    record Occupancy(long entries, long bytes, long poolUsedBytes, long chargedBytes, long evictions) {
    }

    /** Whether {@code key} is stored. */
    boolean exists(String key);

    /** The chunk under {@code key}, held until the lease is closed, or empty. */
    Optional<Lease> lease(String key);

    /**
     * Stores a chunk of {@code length} payload bytes arriving from {@code source}. A store that
     * cannot or will not keep it reads and drops the rest of the payload itself and returns false.
     *
     * @throws IOException when the connection fails mid-payload (whatever was taken for it is given back)
     */
    boolean put(String key, byte[] metadata, int length, PayloadSource source) throws IOException;

    /** Removes {@code key}; false when absent or when the store does not let clients remove. */
    boolean remove(String key);

    /** A snapshot of what the store holds. */
    Occupancy occupancy();

    /** Releases what the store owns (not what it only exposes). */
    @Override
    void close();
}
