package lmcache4j.engine.storage.policy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** The bounded fingerprint memory behind the ghost lists and the reuse history. */
class FingerprintLruTest {
    @Test
    void itForgetsTheEldestWhenFullAndTouchRefreshes() {
        FingerprintLru lru = new FingerprintLru(3);
        assertFalse(lru.touch(1));
        lru.add(2);
        lru.add(3);
        assertTrue(lru.touch(1)); // 1 is the youngest now
        lru.add(4);               // forgets 2, the eldest
        assertFalse(lru.contains(2));
        assertTrue(lru.contains(1) && lru.contains(3) && lru.contains(4));
        assertEquals(3, lru.size());
        assertEquals(3, lru.removeEldest());
        assertTrue(lru.remove(4));
        assertFalse(lru.remove(4));
        assertEquals(1, lru.size());
    }

    @Test
    void growingKeepsEverythingAndRaisesTheBound() {
        FingerprintLru lru = new FingerprintLru(2);
        lru.add(1);
        lru.add(2);
        lru.growTo(5000);
        for (long f = 3; f <= 5000; f++) {
            lru.add(f);
        }
        assertEquals(5000, lru.size());
        assertTrue(lru.contains(1) && lru.contains(5000));
        lru.add(5001);
        assertFalse(lru.contains(1));
    }

    @Test
    void aFreedSlotIsReusedWithoutDisturbingTheOrder() {
        FingerprintLru lru = new FingerprintLru(4);
        lru.add(1);
        lru.add(2);
        lru.add(3);
        assertTrue(lru.remove(2)); // its slot is free
        lru.add(4);                // and taken again
        assertTrue(lru.touch(1));  // order now 3, 4, 1
        assertEquals(3, lru.removeEldest());
        assertEquals(4, lru.removeEldest());
        assertEquals(1, lru.removeEldest());
        assertEquals(0, lru.size());
        assertEquals(0, lru.removeEldest()); // empty
    }

    @Test
    void theBoundOnlyGrows() {
        FingerprintLru lru = new FingerprintLru(2);
        lru.growTo(1);
        assertEquals(2, lru.limit());
        lru.growTo(5);
        assertEquals(5, lru.limit());
    }
}
