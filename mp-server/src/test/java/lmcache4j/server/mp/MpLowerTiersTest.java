package lmcache4j.server.mp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Predicate;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import lmcache4j.allocator.host.SharedMemoryArena;
import lmcache4j.server.lm.LmCacheServer;
import lmcache4j.server.mp.wire.MpScalars;
import lmcache4j.server.mp.wire.MpTransferCodec;
import lmcache4j.server.mp.wire.PrepareRetrieveResponse;
import lmcache4j.server.mp.wire.PrepareStoreResponse;
import lmcache4j.server.mp.wire.ShmSlot;

/**
 * The MP server's lower tiers: chunks written through to the disk or a remote store come back
 * into the pool on a lookup the pool misses (prefetch status None until the load ends, then the
 * count once), byte for byte; a restarted server finds what an earlier one wrote; a corrupt file
 * or a dead remote is a miss, never wrong bytes and never a hang; the writer's queue stays bounded.
 */
@Timeout(120)
class MpLowerTiersTest {
    private static final int CHUNK = 256;
    private static final long INSTANCE = 7;

    private static MpServer start(MpL2Settings l2) throws IOException {
        return MpServer.start(MpServerSettings.loopback(16L << 20).withPorts(0, -1).withL2(l2));
    }

    private static MpL2Settings disk(Path dir) {
        return MpL2Settings.NONE.withDisk(dir, 64L << 20).withStaging(8L << 20, 64);
    }

    @Test
    void chunksClearedFromThePoolComeBackFromDiskEveryByteEqual(@TempDir Path dir) throws Exception {
        try (MpServer server = start(disk(dir)); MpTestClient c = new MpTestClient(server); Pool pool = new Pool(server)) {
            assertTrue(c.register(INSTANCE).error().isEmpty());
            int[] tokens = MpTestClient.tokens(11, 3 * CHUNK);
            byte[][] stored = store(c, pool, tokens, "w", 11);
            awaitL2(server, s -> s.tierWrites() >= 3);
            server.clear();
            assertEquals(0, server.status().objects(), "the pool forgot every chunk");
            assertEquals(3, lookupAndPoll(c, tokens, "r"), "every chunk loaded from the disk");
            assertEquals(0L, prefetchStatus(c, "r"), "the count is answered once");
            assertArrayEquals2(stored, retrieve(c, pool, tokens, "r"));
            MpL2Stats l2 = server.status().l2();
            assertEquals(1, l2.prefetchJobs());
            assertEquals(3, l2.prefetchedObjects());
            assertEquals(0, l2.prefetchFailures());
            assertEquals(3, l2.written());
            Map<?, ?> json = (Map<?, ?>) ((Map<?, ?>) server.status().toJson().get("storage_manager")).get("l2");
            assertEquals(List.of(true, 3L, 3L), List.of(json.get("enabled"), json.get("prefetched_objects"),
                    json.get("objects_written")), "/api/status: " + json);
            assertTrue(server.status().prometheus().contains("lmcache4j_mp_l2_prefetched_objects_total 3\n"), "/metrics");
        }
    }

    @Test
    void twoRanksLoadEachItsOwnBytesBackFromDisk(@TempDir Path dir) throws Exception {
        try (MpServer server = start(disk(dir)); MpTestClient c = new MpTestClient(server); Pool pool = new Pool(server)) {
            assertTrue(c.register(INSTANCE, 2).error().isEmpty());
            int[] tokens = MpTestClient.tokens(13, 3 * CHUNK);
            byte[][] rank0 = store(c, pool, tokens, "w0", 130, 0, 2);
            byte[][] rank1 = store(c, pool, tokens, "w1", 131, 1, 2);
            awaitL2(server, s -> s.tierWrites() >= 6);
            server.clear();
            assertEquals(0, server.status().objects(), "the pool forgot every chunk of both ranks");
            assertEquals(3, lookupAndPoll(c, tokens, "r", 2), "every chunk of both ranks loaded from the disk");
            assertEquals(6, server.status().l2().prefetchedObjects());
            assertArrayEquals2(rank0, retrieve(c, pool, tokens, "r", 0, 2));
            assertArrayEquals2(rank1, retrieve(c, pool, tokens, "r", 1, 2));
        }
    }

    @Test
    void aRestartedServerServesWhatAnEarlierOneWroteToTheSameDirectory(@TempDir Path dir) throws Exception {
        int[] tokens = MpTestClient.tokens(12, 2 * CHUNK);
        byte[][] stored;
        try (MpServer server = start(disk(dir)); MpTestClient c = new MpTestClient(server); Pool pool = new Pool(server)) {
            assertTrue(c.register(INSTANCE).error().isEmpty());
            stored = store(c, pool, tokens, "w", 12);
            awaitL2(server, s -> s.tierWrites() >= 2);
        }
        try (MpServer server = start(disk(dir)); MpTestClient c = new MpTestClient(server); Pool pool = new Pool(server)) {
            assertTrue(c.register(INSTANCE).error().isEmpty());
            assertEquals(0, server.status().objects());
            assertEquals(2, lookupAndPoll(c, tokens, "r"));
            assertArrayEquals2(stored, retrieve(c, pool, tokens, "r"));
        }
    }

    @Test
    void aCorruptOrTruncatedChunkFileEndsThePrefixWithNoWrongByte(@TempDir Path dir) throws Exception {
        try (MpServer server = start(disk(dir)); MpTestClient c = new MpTestClient(server); Pool pool = new Pool(server)) {
            assertTrue(c.register(INSTANCE).error().isEmpty());
            int[] tokens = MpTestClient.tokens(13, 3 * CHUNK);
            byte[][] first = store(c, pool, Arrays.copyOf(tokens, CHUNK), "w1", 13);
            awaitL2(server, s -> s.tierWrites() >= 1);
            Set<Path> before = files(dir);
            byte[][] second = store(c, pool, Arrays.copyOf(tokens, 2 * CHUNK), "w2", 14);
            awaitL2(server, s -> s.tierWrites() >= 2);
            Set<Path> after = files(dir);
            after.removeAll(before);
            assertEquals(1, after.size(), "the second chunk's file: " + after);
            Path secondFile = after.iterator().next();
            store(c, pool, tokens, "w3", 15);
            awaitL2(server, s -> s.tierWrites() >= 3);
            Set<Path> third = files(dir);
            third.removeAll(before);
            third.remove(secondFile);
            assertEquals(1, third.size());
            try (FileChannel ch = FileChannel.open(secondFile, StandardOpenOption.WRITE, StandardOpenOption.READ)) {
                long at = ch.size() - 1000; // inside the payload
                ByteBuffer b = ByteBuffer.allocate(1);
                ch.read(b, at);
                b.put(0, (byte) (b.get(0) ^ 0x5a));
                ch.write(b.flip(), at);
            }
            try (FileChannel ch = FileChannel.open(third.iterator().next(), StandardOpenOption.WRITE)) {
                ch.truncate(ch.size() / 2);
            }
            server.clear();
            assertEquals(1, lookupAndPoll(c, tokens, "r"), "the prefix stops at the corrupt second chunk");
            byte[][] got = retrieve(c, pool, Arrays.copyOf(tokens, CHUNK), "r");
            assertArrayEquals(first[0], got[0], "the first chunk is served whole");
            assertEquals(1, second.length, "the second store wrote only the new chunk");
            assertTrue(server.status().l2().prefetchFailures() >= 1, server.status().l2().toString());
            awaitL2(server, st -> st.stagingBytes() == 0); // what was read ahead past the corrupt chunk is released
        }
    }

    @Test
    void aRemoteThatDiedIsAMissWithinTheTimeoutAndTheServerServesOn(@TempDir Path dir) throws Exception {
        LmCacheServer remote = LmCacheServer.start(InetAddress.getLoopbackAddress(), 0, 64L << 20, java.util.Optional.empty(),
                16 << 20);
        MpL2Settings l2 = MpL2Settings.NONE.withRemote("lm://127.0.0.1:" + remote.port()).withStaging(8L << 20, 64)
                .withPrefetchTimeout(Duration.ofSeconds(2));
        try (MpServer server = start(l2); MpTestClient c = new MpTestClient(server); Pool pool = new Pool(server)) {
            assertTrue(c.register(INSTANCE).error().isEmpty());
            int[] tokens = MpTestClient.tokens(16, 2 * CHUNK);
            byte[][] stored = store(c, pool, tokens, "w", 16);
            awaitL2(server, s -> s.tierWrites() >= 2);
            server.clear();
            assertEquals(2, lookupAndPoll(c, tokens, "alive"), "the live remote serves both chunks");
            assertArrayEquals2(stored, retrieve(c, pool, tokens, "alive"));
            server.clear();
            remote.close();
            long t0 = System.nanoTime();
            assertEquals(0, lookupAndPoll(c, tokens, "dead"), "a dead remote is a miss");
            assertTrue(System.nanoTime() - t0 < Duration.ofSeconds(20).toNanos(), "bounded by the timeout");
            assertTrue(c.ping());
        } finally {
            remote.close();
        }
    }

    @Test
    void theStatusIsNoneWhileALoadRunsAndAWaitIsAnsweredWhenTheLoadEnds() throws Exception {
        LmCacheServer remote = LmCacheServer.start(InetAddress.getLoopbackAddress(), 0, 64L << 20, java.util.Optional.empty(),
                16 << 20);
        int port = remote.port();
        MpL2Settings l2 = MpL2Settings.NONE.withRemote("lm://127.0.0.1:" + port).withStaging(8L << 20, 64)
                .withPrefetchTimeout(Duration.ofSeconds(4));
        List<Socket> held = new CopyOnWriteArrayList<>();
        try (MpServer server = start(l2); MpTestClient c = new MpTestClient(server); Pool pool = new Pool(server);
             ServerSocket silent = new ServerSocket()) {
            assertTrue(c.register(INSTANCE).error().isEmpty());
            int[] tokens = MpTestClient.tokens(20, 2 * CHUNK);
            store(c, pool, tokens, "w", 20);
            awaitL2(server, s -> s.tierWrites() >= 2);
            server.clear();
            remote.close();
            // The remote's address now answers connections and never a request: every read waits for the timeout.
            silent.setReuseAddress(true);
            silent.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port));
            Thread.ofVirtual().start(() -> {
                try {
                    while (!silent.isClosed()) {
                        held.add(silent.accept());
                    }
                } catch (IOException closed) {
                    // the test is over
                }
            });
            assertNotNull(c.call(8, MpTestClient.key(tokens, 0, tokens.length, "slow", OptionalInt.empty()),
                    MpScalars.encodeInt(1)), "the lookup is answered at once");
            assertNull(prefetchStatus(c, "slow"), "None while the load runs");
            assertEquals(1, server.status().prefetchJobs(), "an active prefetch job");
            // More waits than the server parks: the excess is answered at once (None, as at a timeout),
            // the parked ones when the load ends, long before their own 30 s.
            int waits = MpLookups.MAX_WAITERS + 5;
            long t0 = System.nanoTime();
            for (int i = 0; i < waits; i++) {
                c.sendRaw(List.of(MpScalars.encodeInt(1_000_000 + i), MpScalars.encodeInt(10), MpScalars.encodeString("slow"),
                        MpScalars.encodeFloat(30.0)));
            }
            List<List<byte[]>> atOnce = replies(c, 5, 2_000);
            assertEquals(5, atOnce.size(), "the waits past the cap are answered at once");
            assertTrue(atOnce.stream().allMatch(r -> r.size() == 2), "with None: [uid, op] and no result frame");
            List<List<byte[]>> whenLoaded = replies(c, MpLookups.MAX_WAITERS, 20_000);
            long waitedMillis = (System.nanoTime() - t0) / 1_000_000;
            assertEquals(MpLookups.MAX_WAITERS, whenLoaded.size(), "every parked wait is answered when the load ends");
            assertTrue(whenLoaded.stream().allMatch(r -> r.size() == 3 && r.get(2).length == 1 && r.get(2)[0] == 0),
                    "with the count: 0, a miss");
            assertTrue(waitedMillis >= 200 && waitedMillis < 20_000, "they waited for the load, not for their 30 s: "
                    + waitedMillis + " ms");
            assertTrue(replies(c, 1, 300).isEmpty(), "and nothing more came");
            assertEquals(0L, prefetchStatus(c, "slow"), "read once: nothing is pending any more");
            assertEquals(0, server.status().prefetchJobs());
            assertTrue(c.ping());
        } finally {
            remote.close();
            for (Socket s : held) {
                s.close();
            }
        }
    }

    @Test
    void aBurstLargerThanTheStagingMemoryWaitsForTheDiskInsteadOfBeingDropped(@TempDir Path dir) throws Exception {
        // 2 MiB of staging: 1 MiB for writes, seven 128 KiB chunks; one commit of 48.
        MpL2Settings l2 = MpL2Settings.NONE.withDisk(dir, 64L << 20).withStaging(MpL2Settings.MIN_STAGING_BYTES, 64);
        try (MpServer server = start(l2); MpTestClient c = new MpTestClient(server); Pool pool = new Pool(server)) {
            assertTrue(c.register(INSTANCE).error().isEmpty());
            store(c, pool, MpTestClient.tokens(21, 48 * CHUNK), "burst", 21);
            awaitL2(server, s -> s.tierWrites() >= 48);
            assertEquals(0, server.status().l2().writeDrops(), server.status().l2().toString());
        }
    }

    @Test
    void theWritersQueueBoundDropsAndCountsWhatDoesNotFit(@TempDir Path dir) throws Exception {
        MpL2Settings l2 = MpL2Settings.NONE.withDisk(dir, 64L << 20).withStaging(8L << 20, 2);
        try (MpServer server = start(l2); MpTestClient c = new MpTestClient(server); Pool pool = new Pool(server)) {
            assertTrue(c.register(INSTANCE).error().isEmpty());
            store(c, pool, MpTestClient.tokens(17, 4 * CHUNK), "w", 17); // one commit of 4 objects > a queue of 2
            MpL2Stats s = server.status().l2();
            assertEquals(2, s.writeDrops(), "the two trailing chunks are dropped: " + s);
            assertTrue(s.queued() <= 2);
            awaitL2(server, st -> st.tierWrites() >= 2); // the two leading ones are written
            store(c, pool, MpTestClient.tokens(18, 2 * CHUNK), "w2", 18); // fits
            awaitL2(server, st -> st.tierWrites() >= 4);
            assertEquals(4, server.status().l2().written());
            assertEquals(2, server.status().l2().writeDrops());
            assertTrue(server.status().l2().stagingBytes() <= (8L << 20), "staging stays within its size");
        }
    }

    @Test
    void withoutLowerTiersTheCountIsReadyAtOnce() throws Exception {
        try (MpServer server = start(MpL2Settings.NONE); MpTestClient c = new MpTestClient(server);
             Pool pool = new Pool(server)) {
            assertTrue(c.register(INSTANCE).error().isEmpty());
            int[] tokens = MpTestClient.tokens(19, 2 * CHUNK);
            store(c, pool, tokens, "w", 19);
            server.clear();
            assertNotNull(c.call(8, MpTestClient.key(tokens, 0, tokens.length, "r", OptionalInt.empty()), MpScalars.encodeInt(1)));
            assertEquals(0L, prefetchStatus(c, "r"), "never None without lower tiers");
            assertTrue(server.status().l2().tiers().isEmpty());
        }
    }

    // ---- helpers ------------------------------------------------------------------------------

    /** The server's pool, mapped as a worker maps it. */
    private static final class Pool implements AutoCloseable {
        private final Arena arena = Arena.ofShared();
        final MemorySegment segment;

        Pool(MpServer server) throws IOException {
            Path path = SharedMemoryArena.DEV_SHM.resolve(server.shmName());
            try (FileChannel ch = FileChannel.open(path, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
                segment = ch.map(FileChannel.MapMode.READ_WRITE, 0, ch.size(), arena);
            }
        }

        @Override
        public void close() {
            arena.close();
        }
    }

    /** Stores the prompt's chunks (worker 0 of a world of 1), each slot filled with seeded random bytes. */
    private static byte[][] store(MpTestClient c, Pool pool, int[] tokens, String requestId, int seed) throws Exception {
        return store(c, pool, tokens, requestId, seed, 0, 1);
    }

    /** Stores worker {@code rank}'s chunks of the prompt, each slot filled with seeded random bytes. */
    private static byte[][] store(MpTestClient c, Pool pool, int[] tokens, String requestId, int seed, int rank,
                                  int worldSize) throws Exception {
        byte[] key = MpTestClient.key(tokens, 0, tokens.length, requestId, OptionalInt.of(rank), worldSize);
        PrepareStoreResponse prepared = MpTransferCodec.decodeStore(c.call(16, key, MpScalars.encodeInt(INSTANCE)).get(0));
        List<ShmSlot> slots = prepared.context().slots().orElseThrow();
        byte[][] bytes = new byte[slots.size()][];
        Random rnd = new Random(seed);
        for (int i = 0; i < slots.size(); i++) {
            bytes[i] = new byte[(int) slots.get(i).length()];
            rnd.nextBytes(bytes[i]);
            MemorySegment.copy(bytes[i], 0, pool.segment, ValueLayout.JAVA_BYTE, slots.get(i).offset(), bytes[i].length);
        }
        List<byte[]> done = c.call(17, key, MpScalars.encodeInt(INSTANCE), MpScalars.encodeBytes(new byte[0]));
        assertArrayEquals(MpScalars.encodeBool(true), done.get(0));
        return bytes;
    }

    /** Looks the prompt up for all ranks and polls its prefetch status until it is a number. */
    private static long lookupAndPoll(MpTestClient c, int[] tokens, String requestId) throws InterruptedException {
        return lookupAndPoll(c, tokens, requestId, 1);
    }

    private static long lookupAndPoll(MpTestClient c, int[] tokens, String requestId, int worldSize)
            throws InterruptedException {
        assertNotNull(c.call(8, MpTestClient.key(tokens, 0, tokens.length, requestId, OptionalInt.empty(), worldSize),
                MpScalars.encodeInt(worldSize)), "lookup answered");
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (System.nanoTime() < deadline) {
            Long hits = prefetchStatus(c, requestId);
            if (hits != null) {
                return hits;
            }
            Thread.sleep(5);
        }
        throw new AssertionError("the prefetch status stayed None");
    }

    /** The next {@code count} replies, or fewer if no reply comes for {@code millis}: each reply's frames. */
    private static List<List<byte[]>> replies(MpTestClient c, int count, int millis) {
        c.dealer.setReceiveTimeOut(millis);
        List<List<byte[]>> out = new ArrayList<>();
        for (byte[] first; out.size() < count && (first = c.dealer.recv(0)) != null; ) {
            List<byte[]> frames = new ArrayList<>(List.of(first));
            while (c.dealer.hasReceiveMore()) {
                frames.add(c.dealer.recv(0));
            }
            out.add(frames);
        }
        return out;
    }

    /** {@code query_prefetch_status}: the count, or null for None. */
    private static Long prefetchStatus(MpTestClient c, String requestId) {
        List<byte[]> reply = c.call(9, MpScalars.encodeString(requestId));
        assertNotNull(reply, "query_prefetch_status answered");
        if (reply.isEmpty()) {
            return null;
        }
        return (long) (reply.get(0)[0] & 0x7f); // a positive fixint: counts here are < 128
    }

    /** prepare_retrieve, a copy of every slot, commit_retrieve. */
    private static byte[][] retrieve(MpTestClient c, Pool pool, int[] tokens, String requestId) throws Exception {
        return retrieve(c, pool, tokens, requestId, 0, 1);
    }

    /** As above, for worker {@code rank} of a world of {@code worldSize}. */
    private static byte[][] retrieve(MpTestClient c, Pool pool, int[] tokens, String requestId, int rank, int worldSize)
            throws Exception {
        byte[] key = MpTestClient.key(tokens, 0, tokens.length, requestId, OptionalInt.of(rank), worldSize);
        PrepareRetrieveResponse r = MpTransferCodec.decodeRetrieve(c.call(18, key, MpScalars.encodeInt(INSTANCE)).get(0));
        List<ShmSlot> slots = r.context().slots().orElseThrow();
        byte[][] out = new byte[slots.size()][];
        for (int i = 0; i < slots.size(); i++) {
            out[i] = pool.segment.asSlice(slots.get(i).offset(), slots.get(i).length()).toArray(ValueLayout.JAVA_BYTE);
        }
        assertArrayEquals(MpScalars.encodeBool(true), c.call(19, key, MpScalars.encodeInt(INSTANCE)).get(0));
        return out;
    }

    private static void assertArrayEquals2(byte[][] expected, byte[][] actual) {
        assertEquals(expected.length, actual.length, "chunks");
        for (int i = 0; i < expected.length; i++) {
            assertArrayEquals(expected[i], actual[i], "chunk " + i);
        }
    }

    private static void awaitL2(MpServer server, Predicate<MpL2Stats> done) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (!done.test(server.status().l2()) && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        assertTrue(done.test(server.status().l2()), server.status().l2().toString());
    }

    private static Set<Path> files(Path dir) throws IOException {
        try (Stream<Path> s = Files.walk(dir)) {
            return new HashSet<>(s.filter(p -> p.toString().endsWith(".lmc")).toList());
        }
    }
}
