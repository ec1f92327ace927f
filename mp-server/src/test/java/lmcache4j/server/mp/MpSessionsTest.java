package lmcache4j.server.mp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

import org.junit.jupiter.api.Test;

class MpSessionsTest {
    private final List<String> dropped = new ArrayList<>();

    private MpSessions<String> sessions(int max, long maxWeight, long ttl) {
        return new MpSessions<>(max, maxWeight, ttl, dropped::add);
    }

    @Test
    void theLeastRecentlyUsedMakesRoomAndIsReported() {
        MpSessions<String> s = sessions(2, 1_000, 100);
        s.getOrCreate("a", 0, id -> id);
        s.getOrCreate("b", 1, id -> id);
        s.get("a", 2); // b is now the least recently used
        s.getOrCreate("c", 3, id -> id);
        assertEquals(List.of("b"), dropped);
        assertTrue(s.get("a", 4).isPresent() && s.get("c", 4).isPresent() && s.get("b", 4).isEmpty());
        assertEquals(1, s.evicted());
    }

    @Test
    void unusedSessionsExpireAndUsedOnesStay() {
        MpSessions<String> s = sessions(10, 1_000, 100);
        s.getOrCreate("old", 0, id -> id);
        s.getOrCreate("young", 50, id -> id);
        s.sweep(120);
        assertEquals(List.of("old"), dropped);
        assertEquals(1, s.size());
        s.sweep(151);
        assertEquals(List.of("old", "young"), dropped);
        assertEquals(2, s.expired());
    }

    @Test
    void weightIsCappedByDroppingOthersFirstAndThenTheHeavyOneItself() {
        MpSessions<String> s = sessions(10, 100, 1_000);
        s.getOrCreate("a", 0, id -> id);
        assertTrue(s.weigh("a", 60));
        s.getOrCreate("b", 1, id -> id);
        assertTrue(s.weigh("b", 60), "a makes room for b");
        assertEquals(List.of("a"), dropped);
        assertEquals(60, s.totalWeight());
        assertFalse(s.weigh("b", 101), "over the cap alone: dropped");
        assertEquals(0, s.totalWeight());
        assertEquals(0, s.size());
    }

    /** Random operations; the running total always equals the sum of the live sessions' weights. */
    @Test
    void theTotalWeightIsAlwaysTheSumOfTheLiveSessions() {
        Random rnd = new Random(26);
        Map<String, Long> weights = new HashMap<>();
        List<String> all = new ArrayList<>();
        MpSessions<String> tracked = new MpSessions<>(16, 500, 50, id -> {
            weights.remove(id);
            all.add(id);
        });
        long now = 0;
        for (int step = 0; step < 20_000; step++) {
            now += rnd.nextInt(3);
            String id = "r" + rnd.nextInt(40);
            switch (rnd.nextInt(4)) {
                case 0 -> tracked.getOrCreate(id, now, x -> x);
                case 1 -> {
                    tracked.getOrCreate(id, now, x -> x);
                    long w = rnd.nextInt(200);
                    weights.put(id, w);
                    if (!tracked.weigh(id, w)) {
                        assertFalse(weights.containsKey(id));
                    }
                }
                case 2 -> {
                    tracked.remove(id);
                    weights.remove(id);
                }
                default -> tracked.sweep(now);
            }
            assertTrue(tracked.size() <= 16);
            assertTrue(tracked.totalWeight() <= 500, "total " + tracked.totalWeight());
            assertEquals(weights.values().stream().mapToLong(Long::longValue).sum(), tracked.totalWeight(), "step " + step);
        }
        assertTrue(all.size() > 0, "sessions were dropped along the way");
    }
}
