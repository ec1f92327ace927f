package lmcache4j.server.mp.tier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import java.util.stream.IntStream;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import lmcache4j.allocator.DType;
import lmcache4j.allocator.HostArenaOptions;
import lmcache4j.allocator.host.HostArena;
import lmcache4j.server.mp.MpL2Settings;
import lmcache4j.server.mp.MpL2Stats;
import lmcache4j.server.mp.store.MpObjectStore;
import lmcache4j.server.mp.store.MpStoreOptions;
import lmcache4j.server.mp.store.ObjectLayout;
import lmcache4j.server.mp.store.Slot;
import lmcache4j.server.mp.store.WriteReservation;
import lmcache4j.server.mp.wire.MpObjectKey;

/**
 * The write-through copies an object out of the pool under a read lock, but a lock can lapse while
 * the copy waits (here: for staging memory, which a remote that stopped answering holds); the pool
 * may then give the object's memory to another object. The copy made after that holds the other
 * object's bytes, and must never reach a tier under the first object's key: a later load would
 * serve them as the first object's KV.
 *
 * <p>The store runs on a test clock, so the locks lapse exactly when the test says. Staging is
 * 2 MiB, 1 MiB of it for writes: one 640 KiB copy fills it. The remote is a socket that accepts and
 * never answers, so its put holds the first copy until the test closes the socket; the writer then
 * waits up to 2 s for staging on each of the jobs behind it. Two of them are queued ahead of the
 * victim's, so the victim's own wait starts 4 s later and the test reuses the memory long before.
 */
@Timeout(120)
class MpLowerTiersLapsedLockTest {
    private static final ObjectLayout LAYOUT = ObjectLayout.kv(2, 256, 320, DType.BFLOAT16); // 640 KiB
    private static final HostArenaOptions HOST = HostArenaOptions.DEFAULT.withCudaPinned(false);
    private static final Duration LOCK_TTL = Duration.ofSeconds(30);
    /** Write jobs queued between the first object's and the victim's. */
    private static final int AHEAD = 2;
    /** Scenario runs at most: one the machine stalled until the victim's own staging wait ended proves nothing. */
    private static final int ATTEMPTS = 3;

    @TempDir
    Path dir;

    @Test
    void aCopyWhoseSlotWentToAnotherObjectWhileItsLockLapsedIsNeverWritten() throws Exception {
        for (int attempt = 1; attempt <= ATTEMPTS; attempt++) {
            if (scenario(dir.resolve("disk-" + attempt), (byte) attempt)) {
                return;
            }
        }
        fail("the victim's staging wait ended before the test reused its memory, " + ATTEMPTS + " times");
    }

    /** One run; false when it proved nothing (the victim's write was dropped before its memory changed hands). */
    private boolean scenario(Path disk, byte seed) throws Exception {
        AtomicLong clock = new AtomicLong(1_000_000_000L);
        MpStoreOptions options = MpStoreOptions.DEFAULT.withReadLockTtl(LOCK_TTL).withWriteTtl(LOCK_TTL);
        int objects = AHEAD + 2;
        List<Socket> held = new CopyOnWriteArrayList<>();
        try (ServerSocket silent = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
             MpObjectStore store = new MpObjectStore(HostArena.allocate(objects * LAYOUT.byteLength(), HOST), options,
                     clock::get)) {
            Thread.ofVirtual().start(() -> acceptForever(silent, held));
            List<MpObjectKey> keys = IntStream.range(0, objects).mapToObj(i -> key(seed, i)).toList();
            MpObjectKey victim = keys.getLast();
            MpL2Settings settings = MpL2Settings.NONE.withDisk(disk, 64L << 20)
                    .withRemote("lm://127.0.0.1:" + silent.getLocalPort() + "?timeout_ms=60000")
                    .withStaging(MpL2Settings.MIN_STAGING_BYTES, 16).withPrefetchTimeout(Duration.ofSeconds(5));
            try (MpLowerTiers tiers = MpLowerTiers.open(settings, store).orElseThrow()) {
                WriteReservation published = store.reserveWrite("worker", keys, LAYOUT);
                assertEquals(objects, published.slots().size(), "the pool holds these objects");
                Slot victimSlot = published.slots().getLast();
                published.slots().forEach(slot -> fill(store, slot, (byte) 0x11));
                assertTrue(store.finishWrite(published));

                tiers.published(keys, LAYOUT);
                // The first copy goes to the disk and to the silent remote, which keeps it: staging's write half is
                // full, and the writer waits for room on each job behind it.
                await(() -> tiers.stats().written() == 1 && tiers.stats().queued() == AHEAD, "the first object's write");

                clock.addAndGet(LOCK_TTL.toNanos() + 1); // the writer's locks on the queued objects lapse
                long fit = store.stats().capacityBytes() / LAYOUT.byteLength();
                List<MpObjectKey> others = IntStream.range(100, 100 + (int) fit).mapToObj(i -> key(seed, i)).toList();
                WriteReservation other = store.reserveWrite("another-worker", others, LAYOUT);
                Slot reused = other.slots().stream().filter(slot -> slot.offset() == victimSlot.offset()).findFirst()
                        .orElseThrow(() -> new AssertionError("no new object took the victim's memory: " + other.slots()));
                other.slots().forEach(slot -> fill(store, slot, (byte) 0x77));
                assertTrue(store.finishWrite(other));
                assertTrue(reused.generation() != victimSlot.generation());
                if (tiers.stats().writeDrops() > AHEAD) {
                    return false; // the victim's wait for staging ended first: its write was dropped untested
                }

                for (Socket s : held) { // the remote fails the first put: staging is free again, the writer copies
                    s.close();
                }
                silent.close();
                await(() -> tiers.stats().written() + tiers.stats().writeDrops() >= objects, "every queued write to end");

                // Nothing under the victim's key in any tier: a load of it is a miss, not another object's bytes.
                CompletableFuture<Integer> loaded = new CompletableFuture<>();
                assertTrue(tiers.prefetch(List.of(victim), 1, 1, LAYOUT, loaded::complete));
                if (loaded.get(30, TimeUnit.SECONDS) > 0) {
                    Slot back = store.unsafeRead(List.of(victim)).getFirst();
                    byte b = store.segment().get(ValueLayout.JAVA_BYTE, back.offset());
                    fail("a tier served the victim's key with another object's bytes (0x" + Integer.toHexString(b & 0xff)
                            + ", the victim's were 0x11)");
                }
                MpL2Stats stats = tiers.stats();
                assertEquals(1, stats.written(), "only the first object reached the tiers: " + stats);
                assertEquals(objects - 1, stats.writeDrops(), "every copy made from memory another object owns was dropped");
            }
            return true;
        } finally {
            for (Socket s : held) {
                s.close();
            }
        }
    }

    private static MpObjectKey key(byte seed, int n) {
        byte[] hash = new byte[32];
        hash[0] = seed;
        hash[1] = (byte) n;
        return new MpObjectKey(hash, "model", MpObjectKey.kvRank(1, 0), 0, "");
    }

    private static void fill(MpObjectStore store, Slot slot, byte value) {
        MemorySegment bytes = store.segment().asSlice(slot.offset(), slot.length());
        bytes.fill(value);
    }

    /** Accepts connections and never reads or answers them: a remote that stopped serving. */
    private static void acceptForever(ServerSocket silent, List<Socket> held) {
        try {
            while (!silent.isClosed()) {
                held.add(silent.accept());
            }
        } catch (IOException closed) {
            // the test closed it
        }
    }

    private static void await(BooleanSupplier done, String what) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!done.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                fail("timed out waiting for " + what);
            }
            Thread.sleep(1);
        }
    }
}
