package lmcache4j.engine.key;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.Optional;

import org.junit.jupiter.api.Test;

class ChunkHasherTest {
    private static final HashAlgorithm SHA = HashAlgorithm.SHA256_CBOR;
    /** sha256(cbor("0")), from the golden vectors. */
    private static final String NONE_HASH_0 = "4e1195df020de59e0d65a33a4279f1183e7ae4e5d980e309f8b55adff2e61c3e";

    @Test
    void anExplicitSeedWinsOverPythonHashSeedWhichWinsOverRandom() {
        Map<String, String> env = Map.of(ChunkHasher.SEED_ENV, "0");
        assertEquals(ChunkHasher.seeded(SHA, "7").noneHash(), ChunkHasher.create(SHA, Optional.of("7"), env).noneHash());
        ChunkHasher fromEnv = ChunkHasher.create(SHA, Optional.empty(), env);
        assertEquals(NONE_HASH_0, fromEnv.noneHash().toHex());
        assertEquals(Optional.of("0"), fromEnv.seed());

        ChunkHasher a = ChunkHasher.create(SHA, Optional.empty(), Map.of());
        ChunkHasher b = ChunkHasher.create(SHA, Optional.empty(), Map.of());
        assertEquals(Optional.empty(), a.seed());
        assertEquals(32, a.noneHash().length());
        assertNotEquals(a.noneHash(), b.noneHash(), "unseeded hashers draw their own random NONE_HASH");
    }

    @Test
    void ofTakesAResolvedSeedAndReadsNoEnvironment() {
        assertEquals(ChunkHasher.seeded(SHA, "5").noneHash(), ChunkHasher.of(SHA, Optional.of("5")).noneHash());
        assertEquals(Optional.empty(), ChunkHasher.of(SHA, Optional.empty()).seed());
    }

    @Test
    void anEmptyPythonHashSeedIsASeedAsVllmReadsIt() {
        ChunkHasher h = ChunkHasher.create(SHA, Optional.empty(), Map.of(ChunkHasher.SEED_ENV, ""));
        assertEquals(ChunkHasher.seeded(SHA, "").noneHash(), h.noneHash());
    }

    @Test
    void theFirstChunkChainsToNoneHashAndEachNextToItsParent() {
        ChunkHasher h = ChunkHasher.seeded(SHA, "0");
        int[] tokens = {1, 2, 3, 4, 5, 6, 7};
        ChunkHash first = h.next(h.noneHash(), tokens, 0, 3);
        ChunkHash second = h.next(first, tokens, 3, 6);
        ChunkHash third = h.next(second, tokens, 6, 7);
        assertEquals(List.of(first, second, third), h.chain(tokens, 3, true));
        assertEquals(List.of(first, second), h.chain(tokens, 3, false));
        assertEquals(List.of(), h.chain(new int[0], 3, true));
    }

    @Test
    void theGivenNoneHashIsUsed() {
        ChunkHash none = ChunkHash.fromHex(NONE_HASH_0);
        ChunkHasher given = ChunkHasher.withNoneHash(SHA, none);
        assertEquals(ChunkHasher.seeded(SHA, "0").chain(new int[] {9, 9}, 1, true), given.chain(new int[] {9, 9}, 1, true));
    }

    @Test
    void unchainedHashingWritesNullForTheParentAndIgnoresTheSeed() {
        int[] tokens = {100, 200, 300};
        assertEquals(ChunkHasher.seeded(SHA, "1").unchained(tokens, 0, 3), ChunkHasher.seeded(SHA, "2").unchained(tokens, 0, 3));
        assertNotEquals(ChunkHasher.seeded(SHA, "1").next(ChunkHasher.seeded(SHA, "1").noneHash(), tokens, 0, 3),
                ChunkHasher.seeded(SHA, "1").unchained(tokens, 0, 3));
    }

    @Test
    void cborInputIsWhatIsHashed() throws Exception {
        ChunkHasher h = ChunkHasher.seeded(SHA, "0");
        int[] tokens = {5, 500, 50000, 5000000};
        byte[] input = h.cborInput(h.noneHash(), tokens, 1, 4);
        byte[] digest = java.security.MessageDigest.getInstance("SHA-256").digest(input);
        assertArrayEquals(digest, h.next(h.noneHash(), tokens, 1, 4).toBytes());
        assertEquals("835820" + NONE_HASH_0 + "83" + "1901f4" + "19c350" + "1a004c4b40" + "f6", java.util.HexFormat.of().formatHex(input));
    }

    @Test
    void badArgumentsAreRejected() {
        ChunkHasher h = ChunkHasher.seeded(SHA, "0");
        assertThrows(IndexOutOfBoundsException.class, () -> h.next(h.noneHash(), new int[3], 2, 4));
        assertThrows(IndexOutOfBoundsException.class, () -> h.next(h.noneHash(), new int[3], 2, 1));
        assertThrows(NullPointerException.class, () -> h.next(null, new int[3], 0, 1));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> h.chain(new int[3], 0, true));
        assertTrue(e.getMessage().contains("chunk size"), e.getMessage());
    }

    @Test
    void hashingIsThreadSafe() throws Exception {
        ChunkHasher h = ChunkHasher.seeded(SHA, "0");
        int[] tokens = new java.util.Random(1).ints(4096, 0, 128_000).toArray();
        List<ChunkHash> expected = h.chain(tokens, 256, true);
        List<Thread> threads = new java.util.ArrayList<>();
        java.util.concurrent.atomic.AtomicInteger mismatches = new java.util.concurrent.atomic.AtomicInteger();
        for (int t = 0; t < 8; t++) {
            threads.add(Thread.ofPlatform().start(() -> {
                for (int i = 0; i < 50; i++) {
                    if (!expected.equals(h.chain(tokens, 256, true))) {
                        mismatches.incrementAndGet();
                    }
                }
            }));
        }
        for (Thread t : threads) {
            t.join();
        }
        assertEquals(0, mismatches.get());
    }

    @org.junit.jupiter.api.Test
    @org.junit.jupiter.api.Timeout(60)
    void longChainsFromManyThreadsAtOnceAreAllRight() throws Exception {
        // More callers than helper threads: some chains get a helper, the rest encode on their own.
        ChunkHasher hasher = ChunkHasher.seeded(HashAlgorithm.SHA256_CBOR, "0");
        int threads = 8;
        java.util.List<java.util.concurrent.Future<?>> done = new java.util.ArrayList<>();
        try (var pool = java.util.concurrent.Executors.newFixedThreadPool(threads)) {
            for (int t = 0; t < threads; t++) {
                int seed = t;
                done.add(pool.submit(() -> {
                    java.util.Random rnd = new java.util.Random(seed);
                    for (int round = 0; round < 30; round++) {
                        int[] tokens = rnd.ints(256 * (32 + rnd.nextInt(64)) + rnd.nextInt(256), 0, 128_256).toArray();
                        java.util.List<ChunkHash> chain = hasher.chain(tokens, 256, true);
                        ChunkHash parent = hasher.noneHash();
                        for (int c = 0; c < chain.size(); c++) {
                            parent = hasher.next(parent, tokens, c * 256, Math.min(c * 256 + 256, tokens.length));
                            org.junit.jupiter.api.Assertions.assertEquals(parent, chain.get(c), "thread " + seed + " chunk " + c);
                        }
                    }
                    return null;
                }));
            }
            for (var f : done) {
                f.get(50, java.util.concurrent.TimeUnit.SECONDS);
            }
        }
    }
}
