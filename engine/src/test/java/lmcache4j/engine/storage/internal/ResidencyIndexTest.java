package lmcache4j.engine.storage.internal;

import static lmcache4j.engine.storage.TestChunks.key;
import static lmcache4j.engine.storage.TestChunks.keys;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;

import lmcache4j.engine.key.CacheKey;
import lmcache4j.engine.storage.ResidencyListener;
import lmcache4j.engine.storage.policy.CachePolicies;
import org.junit.jupiter.api.Test;

/**
 * The bookkeeping every local tier shares, driven directly with an entry that only counts its pins
 * and a real LRU policy, so each answer can be checked against what the index was told.
 */
class ResidencyIndexTest {
    /** A tier's entry: evictable while unpinned. */
    private static final class Entry {
        final int id;
        int pins;

        Entry(int id) {
            this.id = id;
        }
    }

    /** Every admit and eviction, as "+tier:marker" or "-tier:marker". */
    private static final class Recorder implements ResidencyListener {
        final List<String> events = new ArrayList<>();

        @Override
        public void admitted(String tier, CacheKey key) {
            events.add("+" + tier + ":" + keyIndex(key));
        }

        @Override
        public void evicted(String tier, CacheKey key) {
            events.add("-" + tier + ":" + keyIndex(key));
        }
    }

    private static int keyIndex(CacheKey key) {
        for (int i = 0; i < 16; i++) {
            if (key(i).equals(key)) {
                return i;
            }
        }
        return -1;
    }

    private static ResidencyIndex<Entry> lruIndex() {
        return new ResidencyIndex<Entry>(CachePolicies.forChunks("LRU"), e -> e.pins++, e -> {
            if (e.pins == 0) {
                return false;
            }
            e.pins--;
            return true;
        }, e -> e.pins == 0);
    }

    private static ResidencyIndex<Entry> filled(int n) {
        ResidencyIndex<Entry> index = lruIndex();
        for (int i = 0; i < n; i++) {
            index.put(key(i), new Entry(i));
        }
        return index;
    }

    @Test
    void prefixHitsCountsTheLeadingRunAndPinsOnlyWhenAsked() {
        ResidencyIndex<Entry> index = filled(3);
        index.remove(key(1));
        assertEquals(1, index.prefixHits(keys(0, 3), false), "the prefix ends at the first missing key");
        assertEquals(0, index.get(key(0)).pins, "a lookup without pin pins nothing");
        assertEquals(1, index.prefixHits(keys(0, 3), true));
        assertEquals(1, index.get(key(0)).pins);
        assertEquals(0, index.get(key(2)).pins, "a key past the gap is not pinned");
        assertEquals(0, index.prefixHits(List.of(key(9), key(0)), true));
        assertEquals(1, index.get(key(0)).pins, "a lookup that misses at once pins nothing");
        assertArrayEquals(new boolean[] {true, false, true, false}, index.containsEach(keys(0, 4)));
        assertEquals(1, index.get(key(0)).pins, "containsEach neither pins nor unpins");
        assertFalse(index.lock().isLocked(), "every lookup released the lock");
    }

    @Test
    void unpinReportsOnlyAnActualUnpinAndUnpinAllSkipsAbsentKeys() {
        ResidencyIndex<Entry> index = filled(2);
        assertFalse(index.unpin(key(0)), "not pinned: nothing to undo");
        assertFalse(index.unpin(key(7)), "absent");
        assertTrue(index.pin(key(0)));
        assertFalse(index.pin(key(7)));
        assertTrue(index.contains(key(0), true));
        assertEquals(2, index.get(key(0)).pins);
        assertTrue(index.unpin(key(0)));
        assertEquals(1, index.get(key(0)).pins);
        index.pin(key(1));
        index.unpinAll(List.of(key(0), key(7), key(1), key(1)));
        assertEquals(0, index.get(key(0)).pins);
        assertEquals(0, index.get(key(1)).pins, "a second unpin of an unpinned entry changes nothing");
        assertFalse(index.lock().isLocked(), "unpinAll released the lock");
    }

    @Test
    void evictionTakesTheLeastRecentUnpinnedEntryAndNothingWhenAllArePinned() {
        ResidencyIndex<Entry> index = filled(3);
        index.pin(key(0));
        Entry victim = index.evictOne();
        assertEquals(1, victim.id, "LRU order 0, 1, 2 with 0 pinned: 1 goes");
        assertFalse(index.containsKey(key(1)));
        index.pin(key(2));
        assertNull(index.evictOne(), "every entry pinned: no victim");
        assertEquals(2, index.size());
        assertEquals(List.of(), index.evictableKeys());
        assertEquals(java.util.Set.of(key(0), key(2)), java.util.Set.copyOf(index.keys()));
        index.unpin(key(2));
        assertEquals(List.of(key(2)), index.evictableKeys());
        index.check();
    }

    @Test
    void touchAppliesRecencyLastKeyFirstOnlyForKeysStillHeldAndOnlyOnce() {
        ResidencyIndex<Entry> index = filled(4);
        index.contains(key(2), true);
        index.contains(key(1), true);
        index.contains(key(3), false); // not pinned: not remembered
        index.unpinAll(keys(0, 4));
        index.remove(key(1));
        index.put(key(1), new Entry(11)); // back, but as the most recent put
        index.touch();
        // Before the touch (least recent first): 0, 2, 3, 1. The touch hits 1, then 2 (the first pinned, last):
        // 0, 3, 1, 2. Touching in lookup order would leave 1 most recent.
        List<Integer> order = new ArrayList<>();
        Entry e;
        while ((e = index.evictOne()) != null) {
            order.add(e.id);
        }
        assertEquals(List.of(0, 3, 11, 2), order);

        ResidencyIndex<Entry> again = filled(3);
        again.contains(key(0), true);
        again.unpinAll(keys(0, 3));
        again.touch(); // 1, 2, 0
        again.put(key(2), again.remove(key(2))); // put again: 2 is the most recent, 1, 0, 2
        again.touch(); // the remembered keys were cleared: this does nothing
        assertEquals(1, again.evictOne().id, "1 and 0 were neither touched nor put since");
        assertEquals(0, again.evictOne().id, "a second touch does not touch the first touch's keys again");
        again.put(key(1), new Entry(1));
        again.contains(key(2), true); // 2, 1
        again.unpin(key(2));
        again.forgetRequest();
        again.touch();
        assertEquals(2, again.evictOne().id, "a forgotten request is not touched");
        assertFalse(again.lock().isLocked(), "every operation released the lock");
    }

    @Test
    void removedEntriesAreForgottenByThePolicyAndTheListenerHearsEachChangeOnce() {
        ResidencyIndex<Entry> index = lruIndex();
        Recorder recorder = new Recorder();
        index.setListener("T", recorder);
        Entry first = new Entry(0);
        index.put(key(0), first);
        index.put(key(0), new Entry(10)); // a replacement: not a second admit
        index.put(key(1), new Entry(1));
        assertNull(index.remove(key(5)));
        assertFalse(index.remove(key(0), first), "the entry was replaced: the stale one is not removed");
        assertTrue(index.containsKey(key(0)));
        Entry current = index.get(key(0));
        assertTrue(index.remove(key(0), current));
        assertFalse(index.remove(key(0), current));
        assertSame(null, index.get(key(0)));
        index.check();
        assertEquals(1, index.evictOne().id);
        assertEquals(List.of("+T:0", "+T:1", "-T:0", "-T:1"), recorder.events);
        assertEquals(0, index.size());
        assertEquals(List.of(), index.keys());
        assertEquals("LRU", index.policyName());
        assertThrows(NullPointerException.class, () -> index.put(key(3), null));
        assertThrows(NullPointerException.class, () -> index.setListener(null, recorder));
    }

    @Test
    void checkFailsWhenThePolicyAndTheEntriesDisagree() {
        var policy = CachePolicies.forChunks("LRU");
        ResidencyIndex<Entry> index = new ResidencyIndex<>(policy, e -> e.pins++, e -> false, e -> true);
        index.put(key(0), new Entry(0));
        policy.onPut(key(1)); // the policy told of a key the index does not hold
        IllegalStateException e = assertThrows(IllegalStateException.class, index::check);
        assertTrue(e.getMessage().contains("tracks 2 keys, cache holds 1"), e.getMessage());
    }
}
