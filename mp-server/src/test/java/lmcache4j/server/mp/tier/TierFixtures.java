package lmcache4j.server.mp.tier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import lmcache4j.allocator.DType;
import lmcache4j.allocator.HostArenaOptions;
import lmcache4j.allocator.host.HostArena;
import lmcache4j.server.mp.store.MpObjectStore;
import lmcache4j.server.mp.store.MpStoreOptions;
import lmcache4j.server.mp.store.ObjectLayout;
import lmcache4j.server.mp.store.Slot;
import lmcache4j.server.mp.store.WriteReservation;
import lmcache4j.server.mp.wire.MpObjectKey;

/** What the lower tiers' tests in this package share: a pool, keys, objects published into it, a remote that never answers. */
final class TierFixtures {
    /** 640 KiB: one fills most of the 1 MiB write half of the smallest staging memory. */
    static final ObjectLayout LAYOUT = ObjectLayout.kv(2, 256, 320, DType.BFLOAT16);
    static final HostArenaOptions HOST = HostArenaOptions.DEFAULT.withCudaPinned(false);

    private TierFixtures() {
    }

    /** A pool of {@code objects} objects of {@link #LAYOUT} on the system clock. */
    static MpObjectStore store(int objects) {
        return new MpObjectStore(HostArena.allocate(objects * LAYOUT.byteLength(), HOST), MpStoreOptions.DEFAULT,
                System::nanoTime);
    }

    /** Chunk {@code chunk}'s object of {@code rank} out of {@code worldSize}, its hash led by {@code seed}. */
    static MpObjectKey key(int seed, int chunk, int worldSize, int rank) {
        byte[] hash = new byte[32];
        hash[0] = (byte) seed;
        hash[1] = (byte) chunk;
        return new MpObjectKey(hash, "model", MpObjectKey.kvRank(worldSize, rank), 0, "");
    }

    /** The byte {@code key}'s object is filled with: its chunk and rank, so two objects never look alike. */
    static byte pattern(MpObjectKey key) {
        return (byte) (0x10 + key.chunkHash()[1] * 4 + (key.kvRank() & 0xff));
    }

    /** Stores {@code keys} in the pool, each filled with its {@link #pattern}, and publishes them to {@code tiers}. */
    static void publish(MpObjectStore store, MpLowerTiers tiers, List<MpObjectKey> keys) {
        WriteReservation reservation = store.reserveWrite("worker", keys, LAYOUT);
        assertEquals(keys.size(), reservation.slots().size(), "the pool takes every object");
        for (Slot slot : reservation.slots()) {
            store.segment().asSlice(slot.offset(), slot.length()).fill(pattern(keys.get(slot.index())));
        }
        assertTrue(store.finishWrite(reservation));
        tiers.published(keys, LAYOUT);
    }

    /** Whether every byte of {@code key}'s object in the pool is its pattern. */
    static boolean holdsItsOwnBytes(MpObjectStore store, MpObjectKey key) {
        Slot slot = store.unsafeRead(List.of(key)).getFirst();
        MemorySegment bytes = store.segment().asSlice(slot.offset(), slot.length());
        MemorySegment expected = MemorySegment.ofArray(new byte[(int) slot.length()]).fill(pattern(key));
        return bytes.mismatch(expected) == -1;
    }

    /** Waits up to 20 s for {@code done}; polls, so a test that fails waits the whole time only when it fails. */
    static void await(BooleanSupplier done, String what) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (!done.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) {
                fail("timed out waiting for " + what);
            }
            Thread.sleep(2);
        }
    }

    /** A remote store that accepts connections and never reads or answers them: one that stopped serving. */
    static final class SilentRemote implements AutoCloseable {
        private final ServerSocket server;
        final List<Socket> accepted = new CopyOnWriteArrayList<>();

        SilentRemote() throws IOException {
            server = new ServerSocket(0, 200, InetAddress.getLoopbackAddress());
            Thread.ofVirtual().start(() -> {
                try {
                    while (!server.isClosed()) {
                        accepted.add(server.accept());
                    }
                } catch (IOException closed) {
                    // close() ended it
                }
            });
        }

        /** Its {@code lm://} URL, whose own per-operation timeout is ten minutes: only the tier's timeout ends a wait. */
        String url() {
            return "lm://127.0.0.1:" + server.getLocalPort() + "?timeout_ms=600000";
        }

        @Override
        public void close() throws IOException {
            server.close();
            for (Socket s : accepted) {
                s.close();
            }
        }
    }
}
