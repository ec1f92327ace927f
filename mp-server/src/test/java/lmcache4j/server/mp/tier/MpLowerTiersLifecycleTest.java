package lmcache4j.server.mp.tier;

import static lmcache4j.server.mp.tier.TierFixtures.LAYOUT;
import static lmcache4j.server.mp.tier.TierFixtures.await;
import static lmcache4j.server.mp.tier.TierFixtures.holdsItsOwnBytes;
import static lmcache4j.server.mp.tier.TierFixtures.key;
import static lmcache4j.server.mp.tier.TierFixtures.publish;
import static lmcache4j.server.mp.tier.TierFixtures.store;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import lmcache4j.allocator.DType;
import lmcache4j.server.lm.LmCacheServer;
import lmcache4j.server.mp.MpL2Settings;
import lmcache4j.server.mp.store.MpObjectStore;
import lmcache4j.server.mp.store.WriteReservation;
import lmcache4j.server.mp.tier.TierFixtures.SilentRemote;
import lmcache4j.server.mp.wire.MpObjectKey;

/**
 * What the lower tiers let go of, and the bounds they keep: a close releases every lock the
 * writer's queue holds and closes the tiers and staging memory; objects read ahead and never taken
 * go back to staging; loads at once are capped, and each ends within the tier's timeout; a chunk the
 * disk holds is not written again; a load plans only the chunks every rank of which a tier holds.
 */
@Timeout(90)
class MpLowerTiersLifecycleTest {
    @TempDir
    Path dir;

    @Test
    void aCloseReleasesTheQueuedObjectsLocksAndClosesTheRemoteAndStaging() throws Exception {
        try (SilentRemote remote = new SilentRemote(); MpObjectStore store = store(5)) {
            MpL2Settings settings = MpL2Settings.NONE.withRemote(remote.url())
                    .withStaging(MpL2Settings.MIN_STAGING_BYTES, 16).withPrefetchTimeout(Duration.ofSeconds(1));
            MpLowerTiers tiers = MpLowerTiers.open(settings, store).orElseThrow();
            List<MpObjectKey> keys = IntStream.range(0, 5).mapToObj(i -> key(1, i, 1, 0)).toList();
            publish(store, tiers, keys);
            // The silent remote keeps the first copy, so the write half stays full: the writer waits for staging
            // with the second object locked, and three wait in its queue, locked too.
            await(() -> tiers.stats().written() == 1 && tiers.stats().queued() == 3, "the first write");
            assertEquals(4, store.stats().lockedObjects(), store.stats().toString());
            await(() -> !remote.accepted.isEmpty(), "the remote tier's connection");

            tiers.close();
            assertEquals(0, store.stats().lockedObjects(), "every queued object's lock released: " + store.stats());
            assertTrue(tiers.stats().writeDrops() >= 1, "the write waiting for staging is dropped, counted: " + tiers.stats());
            assertFalse(tiers.prefetch(keys.subList(0, 1), 1, 1, LAYOUT, n -> { }), "a closed instance starts no load");
            assertThrows(IllegalStateException.class, () -> tiers.staging().allocateForWrite(LAYOUT.shape(), DType.BFLOAT16),
                    "staging memory closed");
            for (Socket s : remote.accepted) {
                s.setSoTimeout(10_000);
                try (InputStream in = s.getInputStream()) {
                    while (in.read(new byte[4096]) >= 0) {
                        // what the remote tier sent before it closed
                    }
                }
            }
            tiers.close(); // a second close does nothing
        }
    }

    @Test
    void objectsReadAheadPastACorruptChunkGoBackToStaging() throws Exception {
        try (MpObjectStore store = store(4)) {
            MpL2Settings settings = MpL2Settings.NONE.withDisk(dir, 64L << 20).withStaging(8L << 20, 16)
                    .withPrefetchTimeout(Duration.ofSeconds(20));
            try (MpLowerTiers tiers = MpLowerTiers.open(settings, store).orElseThrow()) {
                List<MpObjectKey> keys = IntStream.range(0, 4).mapToObj(i -> key(2, i, 1, 0)).toList();
                publish(store, tiers, keys.subList(0, 1));
                await(() -> tiers.stats().tierWrites() == 1, "the first chunk's file");
                Set<Path> first = files(dir);
                publish(store, tiers, keys.subList(1, 4));
                await(() -> tiers.stats().tierWrites() == 4 && store.stats().lockedObjects() == 0, "the other chunks' files");
                assertEquals(1, first.size(), first.toString());
                flipAByteInThePayload(first.iterator().next());
                assertEquals(4, store.clear(false));

                // Taking the first chunk starts reading the next two ahead; the first is corrupt, so the load ends
                // there, and the two read ahead are never taken.
                CompletableFuture<Integer> loaded = new CompletableFuture<>();
                assertTrue(tiers.prefetch(keys, 1, 1, LAYOUT, loaded::complete));
                assertEquals(0, loaded.get(30, TimeUnit.SECONDS), "the prefix ends at the corrupt first chunk");
                assertEquals(1, tiers.stats().prefetchFailures(), tiers.stats().toString());
                await(() -> tiers.stats().stagingBytes() == 0, "the objects read ahead to go back to staging ("
                        + tiers.stats().stagingBytes() + " bytes held)");
            }
        }
    }

    @Test
    void loadsAtOnceAreCappedAndEachEndsWithinTheTiersTimeoutNotTheUrls() throws Exception {
        try (SilentRemote remote = new SilentRemote(); MpObjectStore store = store(2)) {
            MpL2Settings settings = MpL2Settings.NONE.withRemote(remote.url()).withPrefetchTimeout(Duration.ofSeconds(1));
            MpLowerTiers tiers = MpLowerTiers.open(settings, store).orElseThrow();
            try {
                List<MpObjectKey> one = List.of(key(3, 0, 1, 0));
                CountDownLatch ended = new CountDownLatch(MpLowerTiers.MAX_JOBS);
                AtomicInteger chunks = new AtomicInteger();
                long start = System.nanoTime();
                for (int i = 1; i <= MpLowerTiers.MAX_JOBS; i++) {
                    assertTrue(tiers.prefetch(one, 1, 1, LAYOUT, n -> {
                        chunks.addAndGet(n);
                        ended.countDown();
                    }), "load " + i + " of " + MpLowerTiers.MAX_JOBS + " starts");
                }
                assertFalse(tiers.prefetch(one, 1, 1, LAYOUT, n -> { }), "one more while they all wait on the remote");
                // The remote never answers; its URL would wait ten minutes, the tier's timeout is the prefetch timeout.
                assertTrue(ended.await(20, TimeUnit.SECONDS), "every load ended within the 1 s prefetch timeout");
                assertEquals(0, chunks.get(), "each a miss");
                assertTrue(System.nanoTime() - start >= TimeUnit.SECONDS.toNanos(1) - TimeUnit.MILLISECONDS.toNanos(50),
                        "they waited on the remote the whole timeout, so they were all in flight together");
                CompletableFuture<Integer> again = new CompletableFuture<>();
                assertTrue(tiers.prefetch(one, 1, 1, LAYOUT, again::complete), "once they ended, a load starts again");
                assertEquals(0, again.get(20, TimeUnit.SECONDS));
            } finally {
                remote.close(); // first: a load still waiting on it ends now
                tiers.close();
            }
        }
    }

    @Test
    void anObjectWhoseKeyNoTierKeyCarriesIsDroppedCountedAndUnlocked() throws Exception {
        try (MpObjectStore store = store(2)) {
            MpL2Settings settings = MpL2Settings.NONE.withDisk(dir, 64L << 20).withStaging(4L << 20, 16);
            try (MpLowerTiers tiers = MpLowerTiers.open(settings, store).orElseThrow()) {
                MpObjectKey at = new MpObjectKey(new byte[32], "org@model", MpObjectKey.kvRank(1, 0), 0, "");
                assertTrue(TierKeys.of(at, LAYOUT).isEmpty(), "an engine key cannot carry a model with '@'");
                WriteReservation reservation = store.reserveWrite("worker", List.of(at), LAYOUT);
                assertTrue(store.finishWrite(reservation));
                tiers.published(List.of(at), LAYOUT);
                assertEquals(1, tiers.stats().writeDrops(), tiers.stats().toString());
                assertEquals(0, tiers.stats().queued());
                assertEquals(0, store.stats().lockedObjects(), "its lock released at once");
            }
        }
    }

    @Test
    void aChunkTheDiskHoldsAlreadyIsNotCopiedForItAgain() throws Exception {
        try (MpObjectStore store = store(3)) {
            MpL2Settings settings = MpL2Settings.NONE.withDisk(dir, 64L << 20).withStaging(4L << 20, 16);
            try (MpLowerTiers tiers = MpLowerTiers.open(settings, store).orElseThrow()) {
                MpObjectKey a = key(4, 0, 1, 0);
                MpObjectKey b = key(4, 1, 1, 0);
                publish(store, tiers, List.of(a));
                await(() -> tiers.stats().tierWrites() == 1 && store.stats().lockedObjects() == 0, "a on disk");
                assertEquals(1, store.clear(false));
                publish(store, tiers, List.of(a)); // stored again after the pool dropped it: the disk has it
                publish(store, tiers, List.of(b));
                // the writer counts a copy in `written` after its tier has counted the write: wait for both, then for
                // anything a second copy of a would still add
                await(() -> tiers.stats().tierWrites() >= 2 && tiers.stats().written() >= 2 && tiers.stats().queued() == 0,
                        "b on disk");
                Thread.sleep(200);
                assertEquals(2, tiers.stats().written(), "a copied once and b once: " + tiers.stats());
                assertEquals(2, tiers.stats().tierWrites(), tiers.stats().toString());
                assertEquals(0, store.stats().lockedObjects());
            }
        }
    }

    @Test
    void aLoadPlansOnlyTheChunksEveryRankOfWhichATierHolds() throws Exception {
        try (MpObjectStore store = store(8)) {
            MpL2Settings settings = MpL2Settings.NONE.withDisk(dir, 64L << 20).withStaging(8L << 20, 16)
                    .withPrefetchTimeout(Duration.ofSeconds(20));
            try (MpLowerTiers tiers = MpLowerTiers.open(settings, store).orElseThrow()) {
                // Chunk-major, two ranks a chunk; the disk gets every object but rank 1 of chunk 2.
                List<MpObjectKey> keys = IntStream.range(0, 6).mapToObj(i -> key(5, i / 2, 2, i % 2)).toList();
                publish(store, tiers, keys.subList(0, 5));
                await(() -> tiers.stats().tierWrites() == 5 && store.stats().lockedObjects() == 0, "five objects on disk");
                assertEquals(5, store.clear(false));

                assertEquals(2, load(tiers, keys.subList(0, 4)), "both chunks, every rank held");
                for (MpObjectKey k : keys.subList(0, 4)) {
                    assertTrue(holdsItsOwnBytes(store, k), "rank " + (k.kvRank() & 0xff) + " of chunk " + k.chunkHash()[1]);
                }
                assertEquals(4, store.releaseRead(keys.subList(0, 4)));
                assertEquals(4, store.clear(false));

                assertEquals(2, load(tiers, keys), "chunk 2 lacks a rank: the prefix is two chunks");
                assertEquals(0, tiers.stats().prefetchFailures(), "a chunk no tier holds whole is not tried: " + tiers.stats());
                assertEquals(8, tiers.stats().prefetchedObjects());
                assertFalse(store.contains(keys.get(4)), "chunk 2's rank 0 is not loaded without its rank 1");
                assertEquals(4, store.releaseRead(keys.subList(0, 4)));
            }
        }
    }

    @Test
    void aLoadThatThrowsIsAMissCountedAndHoldsNothing() throws Exception {
        MpObjectStore store = store(2);
        MpL2Settings settings = MpL2Settings.NONE.withDisk(dir, 64L << 20).withStaging(4L << 20, 16);
        try (MpLowerTiers tiers = MpLowerTiers.open(settings, store).orElseThrow()) {
            MpObjectKey a = key(6, 0, 1, 0);
            publish(store, tiers, List.of(a));
            await(() -> tiers.stats().tierWrites() == 1 && store.stats().lockedObjects() == 0, "a on disk");
            store.close(); // the disk holds the chunk; reserving pool memory for it throws
            assertEquals(0, load(tiers, List.of(a)));
            assertEquals(1, tiers.stats().prefetchFailures(), tiers.stats().toString());
            assertEquals(0, tiers.stats().stagingBytes());
        }
    }

    @Test
    void aCorruptDiskCopyFallsBackToTheRemotesWholeOne() throws Exception {
        try (LmCacheServer server = LmCacheServer.start(InetAddress.getLoopbackAddress(), 0, 16L << 20, Optional.empty(),
                1 << 20);
             MpObjectStore store = store(2)) {
            MpL2Settings settings = MpL2Settings.NONE.withDisk(dir, 64L << 20).withRemote("lm://127.0.0.1:" + server.port())
                    .withStaging(8L << 20, 16).withPrefetchTimeout(Duration.ofSeconds(20));
            try (MpLowerTiers tiers = MpLowerTiers.open(settings, store).orElseThrow()) {
                MpObjectKey a = key(9, 0, 1, 0);
                publish(store, tiers, List.of(a));
                await(() -> tiers.stats().tierWrites() == 2 && store.stats().lockedObjects() == 0, "a on disk and in the remote");
                Set<Path> onDisk = files(dir);
                assertEquals(1, onDisk.size(), onDisk.toString());
                flipAByteInThePayload(onDisk.iterator().next());
                assertEquals(1, store.clear(false));

                // The disk is asked first (its read-ahead, then its read): corrupt both times; the remote's copy is whole.
                assertEquals(1, load(tiers, List.of(a)), "served from the remote");
                assertTrue(holdsItsOwnBytes(store, a), "a's own bytes");
                assertEquals(0, tiers.stats().prefetchFailures(), tiers.stats().toString());
                assertEquals(1, store.releaseRead(List.of(a)));
            }
        }
    }

    @Test
    void aTierThatFailsToOpenClosesTheOneOpenedBeforeIt() throws Exception {
        try (MpObjectStore store = store(2)) {
            long before = diskThreads();
            MpL2Settings settings = MpL2Settings.NONE.withDisk(dir, 64L << 20).withRemote("nosuchscheme://host:1");
            List<StagingMemory> made = new java.util.ArrayList<>();
            IOException e = assertThrows(IOException.class, () -> MpLowerTiers.open(settings, store, bytes -> {
                StagingMemory m = new StagingMemory(bytes);
                made.add(m);
                return m;
            }));
            assertEquals(1, made.size());
            IllegalStateException closed = assertThrows(IllegalStateException.class,
                    () -> made.getFirst().allocateForWrite(LAYOUT.shape(), LAYOUT.dtype()));
            assertTrue(closed.getMessage().contains("closed"), "the staging memory was let go of: " + closed.getMessage());
            assertTrue(e.getMessage().startsWith("cannot open the MP server's lower tier: "), e.getMessage());
            assertTrue(e.getMessage().contains("nosuchscheme"), "names what to fix: " + e.getMessage());
            assertTrue(e.getCause() instanceof IllegalArgumentException, String.valueOf(e.getCause()));
            long after = diskThreads(); // at most as many: another test's tier may have ended its threads meanwhile
            assertTrue(after <= before, "the disk tier opened first is closed, its I/O threads ended: " + before + " before, "
                    + after + " after");
        }
    }

    /** Live I/O threads of disk tiers in this JVM. */
    private static long diskThreads() {
        return Thread.getAllStackTraces().keySet().stream()
                .filter(t -> t.getName().startsWith("lmcache4j-disk-io-") && t.isAlive()).count();
    }

    private static int load(MpLowerTiers tiers, List<MpObjectKey> keys) throws Exception {
        CompletableFuture<Integer> loaded = new CompletableFuture<>();
        assertTrue(tiers.prefetch(keys, (int) (keys.getFirst().kvRank() >>> 8 & 0xff), 1, LAYOUT, loaded::complete));
        return loaded.get(30, TimeUnit.SECONDS);
    }

    private static Set<Path> files(Path dir) throws IOException {
        try (Stream<Path> all = Files.walk(dir)) {
            return new HashSet<>(all.filter(p -> p.toString().endsWith(".lmc")).toList());
        }
    }

    private static void flipAByteInThePayload(Path file) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.WRITE, StandardOpenOption.READ)) {
            long at = ch.size() - 1000;
            ByteBuffer b = ByteBuffer.allocate(1);
            ch.read(b, at);
            b.put(0, (byte) (b.get(0) ^ 0x5a));
            ch.write(b.flip(), at);
        }
    }
}
