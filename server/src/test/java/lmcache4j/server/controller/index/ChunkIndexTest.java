package lmcache4j.server.controller.index;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import org.junit.jupiter.api.Test;

class ChunkIndexTest {
    private static final Holder A_CPU = new Holder("a", 0, "LocalCPUBackend");
    private static final Holder A_DISK = new Holder("a", 0, "LocalDiskBackend");
    private static final Holder A1_DISK = new Holder("a", 1, "LocalDiskBackend");
    private static final Holder B_CPU = new Holder("b", 0, "LocalCPUBackend");

    @Test
    void anInstanceCountsAnyOfItsWorkersAndReportsTheFastestLocationOfItsLastChunk() {
        ChunkIndex index = new ChunkIndex();
        long[] keys = {1, 2, 3, 4};
        index.admit(A_DISK, 1);
        index.admit(A1_DISK, 2);
        index.admit(A_CPU, 2);
        index.admit(A_DISK, 3);
        index.admit(B_CPU, 1);
        index.admit(B_CPU, 3); // not contiguous for b: chunk 2 missing
        ChunkIndex.PrefixMatch m = index.longestPrefixes(keys, keys.length);
        assertEquals(List.of(new ChunkIndex.InstanceHit("a", "LocalDiskBackend", 3, 4),
                new ChunkIndex.InstanceHit("b", "LocalCPUBackend", 1, 2)), m.hits());
        assertEquals("a", m.best().orElseThrow().instanceId());
        index.evict(A_DISK, 3);
        m = index.longestPrefixes(keys, keys.length);
        assertEquals(new ChunkIndex.InstanceHit("a", "LocalCPUBackend", 2, 3), m.hits().getFirst());
    }

    @Test
    void tiesGoToTheInstanceWithFewestEntries() {
        ChunkIndex index = new ChunkIndex();
        index.admit(A_CPU, 1);
        index.admit(A_CPU, 99);
        index.admit(B_CPU, 1);
        for (int i = 0; i < 5; i++) {
            assertEquals("b", index.longestPrefixes(new long[]{1}, 1).best().orElseThrow().instanceId());
        }
        index.admit(B_CPU, 98);
        index.admit(B_CPU, 97);
        assertEquals("a", index.longestPrefixes(new long[]{1}, 1).best().orElseThrow().instanceId());
    }

    @Test
    void aMillionEntriesGrowAndRemoveCleanly() {
        ChunkIndex index = new ChunkIndex(16);
        int n = 1 << 20;
        try (ChunkIndex.Batch b = index.batch()) {
            int a = b.holder(A_CPU);
            int bb = b.holder(B_CPU);
            for (long k = 0; k < n; k++) {
                b.admit(a, k * 0x9E37_79B9L);
                if ((k & 1) == 0) {
                    b.admit(bb, k * 0x9E37_79B9L);
                }
            }
        }
        assertEquals(n + n / 2, index.entries());
        assertTrue(index.memoryBytes() / index.entries() <= 64, "bytes per entry " + index.memoryBytes() / index.entries());
        assertEquals(n, index.removeHolder(A_CPU));
        assertEquals(n / 2, index.entries());
        assertEquals(List.of(B_CPU), index.holdersOf(0));
        assertEquals(List.of(), index.holdersOf(0x9E37_79B9L));
        assertEquals(n / 2, index.removeInstance("b"));
        assertEquals(0, index.entries());
        assertEquals(0, index.instances());
    }

    @Test
    void lookupsRacingAWriterNeverSeeHalfABatch() throws Exception {
        // Each batch admits (or evicts) the same chunk for both a and b, so in every state the two
        // prefixes are equal; a lookup that mixed two states (a torn read let through) would see them
        // differ. Filler admits make the table grow (arrays replaced) during the race.
        ChunkIndex index = new ChunkIndex(16);
        long[] keys = new long[64];
        for (int i = 0; i < keys.length; i++) {
            keys[i] = 1000L + i * 7919L;
        }
        AtomicBoolean stop = new AtomicBoolean();
        AtomicLong rounds = new AtomicLong();
        Thread writer = Thread.ofPlatform().start(() -> {
            long filler = 1L << 50;
            while (!stop.get()) {
                for (long k : keys) {
                    try (ChunkIndex.Batch b = index.batch()) {
                        b.admit(b.holder(A_CPU), k);
                        b.admit(b.holder(B_CPU), k);
                        b.admit(b.holder(A1_DISK), filler++);
                    }
                }
                for (int i = keys.length - 1; i >= 0; i--) {
                    try (ChunkIndex.Batch b = index.batch()) {
                        b.evict(b.holder(A_CPU), keys[i]);
                        b.evict(b.holder(B_CPU), keys[i]);
                    }
                }
                rounds.incrementAndGet();
            }
        });
        try {
            long deadline = System.nanoTime() + 1_000_000_000L;
            long lookups = 0;
            long nonEmpty = 0;
            while (System.nanoTime() < deadline || rounds.get() < 3) {
                ChunkIndex.PrefixMatch m = index.longestPrefixes(keys, keys.length);
                if (!m.hits().isEmpty()) {
                    assertEquals(2, m.hits().size(), "both instances or neither: " + m.hits());
                    assertEquals(m.hits().get(0).chunks(), m.hits().get(1).chunks(), "half a batch seen: " + m.hits());
                    nonEmpty++;
                }
                lookups++;
            }
            assertTrue(nonEmpty > 0, "no lookup overlapped a non-empty state in " + lookups);
        } finally {
            stop.set(true);
            writer.join();
        }
    }

    @Test
    void aHolderChurningOverFewKeysKeepsItsReverseIndexExactAndSmall() {
        ChunkIndex index = new ChunkIndex(1 << 10);
        Holder h = new Holder("churn", 0, "LocalCPUBackend");
        Holder other = new Holder("other", 0, "LocalCPUBackend");
        java.util.TreeSet<Long> model = new java.util.TreeSet<>();
        java.util.SplittableRandom random = new java.util.SplittableRandom(7);
        for (int op = 1; op <= 60_000; op++) {
            long key = random.nextInt(200);
            if (random.nextBoolean()) {
                assertEquals(model.add(key), index.admit(h, key), "admit " + key + " at op " + op);
            } else {
                assertEquals(model.remove(key), index.evict(h, key), "evict " + key + " at op " + op);
            }
            index.admit(other, key); // another holder of the same keys, never evicted
            if (op % 5_000 == 0) {
                long[] keys = index.keysOf(h);
                java.util.Arrays.sort(keys);
                assertEquals(model.stream().mapToLong(Long::longValue).boxed().toList(),
                        java.util.Arrays.stream(keys).boxed().toList(), "the reverse index at op " + op);
                assertEquals(model.size() + 200, index.entries());
                // Compaction keeps the log near its live keys: here well under the 60,000 entries it was appended.
                assertTrue(index.memoryBytes() < 1 << 20, "index bytes " + index.memoryBytes() + " at op " + op);
            }
        }
        assertEquals(model.size(), index.removeHolder(h), "removal removes exactly the live entries, stale ones skipped");
        assertEquals(200, index.entries());
        for (long key = 0; key < 200; key++) {
            assertEquals(java.util.List.of(other), index.holdersOf(key));
        }
    }

    @Test
    void admitsBeyondTheCapAreRefusedAndCountedUntilEntriesLeave() {
        ChunkIndex index = new ChunkIndex(16, 3);
        Holder a = new Holder("a", 0, "LocalCPUBackend");
        Holder b = new Holder("b", 0, "LocalCPUBackend");
        assertTrue(index.admit(a, 1));
        assertTrue(index.admit(a, 2));
        assertTrue(index.admit(b, 1));
        assertFalse(index.admit(b, 2), "the fourth entry");
        assertFalse(index.admit(a, 1), "already held: not a refusal");
        assertEquals(3, index.entries());
        assertEquals(1, index.admitsRefused());
        index.evict(a, 2);
        assertTrue(index.admit(b, 2));
        index.removeWorker("b", 0);
        assertTrue(index.admit(a, 3));
        assertEquals(2, index.entries());
        assertEquals(1, index.admitsRefused());
    }

    @Test
    void aLocationIsForgottenWithItsLastHolderSoNamesCannotFillTheTableForGood() {
        ChunkIndex index = new ChunkIndex();
        for (int round = 0; round < 3; round++) {
            for (int i = 0; i < HolderTable.MAX_LOCATIONS; i++) {
                assertTrue(index.admit(new Holder("a", 0, "location-" + round + "-" + i), 1));
            }
            assertEquals(HolderTable.MAX_LOCATIONS, index.locations());
            int r = round;
            assertThrows(IndexLimitException.class, () -> index.admit(new Holder("a", 0, "one-more-" + r), 1));
            index.removeWorker("a", 0);
            assertEquals(0, index.locations(), "round " + round + ": every location went with its holders");
        }
        assertTrue(index.admit(new Holder("b", 0, "LocalCPUBackend"), 7));
        assertEquals(List.of(new Holder("b", 0, "LocalCPUBackend")), index.holdersOf(7));
    }
}
