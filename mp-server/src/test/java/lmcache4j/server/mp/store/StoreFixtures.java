package lmcache4j.server.mp.store;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import lmcache4j.server.mp.wire.MpObjectKey;
import lmcache4j.server.mp.wire.MpTokenHasher;

import lmcache4j.allocator.DType;
import lmcache4j.allocator.HostArenaOptions;
import lmcache4j.allocator.host.HostArena;

/** Keys, layouts, a manual clock and byte patterns shared by the store's tests. */
final class StoreFixtures {
    /** [2, 2, 16, 64] bf16 = 8 KiB: two pages per object. */
    static final ObjectLayout LAYOUT = ObjectLayout.kv(2, 16, 64, DType.BFLOAT16);
    static final long OBJECT = 8192;

    private StoreFixtures() {
    }

    /** A clock tests move by hand. */
    static final class ManualClock {
        final AtomicLong nanos = new AtomicLong(1_000_000_000L);

        long now() {
            return nanos.get();
        }

        void advanceSeconds(double seconds) {
            nanos.addAndGet((long) (seconds * 1e9));
        }
    }

    static HostArena arena(long bytes) {
        return HostArena.allocate(bytes, HostArenaOptions.DEFAULT.withCudaPinned(false));
    }

    static MpObjectKey key(int chunk, int rank) {
        return key(chunk, rank, "");
    }

    static MpObjectKey key(int chunk, int rank, String salt) {
        byte[] hash = ByteBuffer.allocate(MpTokenHasher.DIGEST_BYTES).putInt(chunk).putInt(7).array();
        return new MpObjectKey(hash, "model", rank, 0, salt);
    }

    static List<MpObjectKey> keys(int from, int to) {
        List<MpObjectKey> keys = new ArrayList<>();
        for (int c = from; c < to; c++) {
            keys.add(key(c, 0));
        }
        return keys;
    }

    /** Chunk-major, rank-minor keys for chunks [0, chunks). */
    static List<MpObjectKey> rankKeys(int chunks, int ranks) {
        List<MpObjectKey> keys = new ArrayList<>();
        for (int c = 0; c < chunks; c++) {
            for (int r = 0; r < ranks; r++) {
                keys.add(key(c, r));
            }
        }
        return keys;
    }

    /** Fills the slot with a pattern derived from {@code tag} (what a worker's copy would write). */
    static void fill(MemorySegment pool, Slot slot, long tag) {
        MemorySegment bytes = pool.asSlice(slot.offset(), slot.length());
        for (long i = 0; i < slot.length(); i += 8) {
            bytes.set(ValueLayout.JAVA_LONG_UNALIGNED, i, tag * 0x9E3779B97F4A7C15L + i);
        }
    }

    /** Whether the slot holds {@code tag}'s pattern. */
    static boolean holds(MemorySegment pool, Slot slot, long tag) {
        MemorySegment bytes = pool.asSlice(slot.offset(), slot.length());
        for (long i = 0; i < slot.length(); i += 8) {
            if (bytes.get(ValueLayout.JAVA_LONG_UNALIGNED, i) != tag * 0x9E3779B97F4A7C15L + i) {
                return false;
            }
        }
        return true;
    }
}
