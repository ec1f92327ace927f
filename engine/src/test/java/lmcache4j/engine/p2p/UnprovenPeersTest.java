package lmcache4j.engine.p2p;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

class UnprovenPeersTest {
    @Test
    void aPeerIsSetAsideOnceUntilItsTimeRunsOut() throws InterruptedException {
        UnprovenPeers peers = new UnprovenPeers(8, TimeUnit.MILLISECONDS.toNanos(200));
        assertTrue(peers.add("10.0.0.1:8200"), "newly set aside");
        assertFalse(peers.add("10.0.0.1:8200"), "already set aside: counted once");
        assertTrue(peers.contains("10.0.0.1:8200"));
        assertFalse(peers.contains("10.0.0.2:8200"));
        Thread.sleep(300);
        assertFalse(peers.contains("10.0.0.1:8200"), "tried again once the time ran out");
    }

    @Test
    void aFloodOfForgedPeersHoldsAtMostTheCapacity() {
        UnprovenPeers peers = new UnprovenPeers(2, TimeUnit.SECONDS.toNanos(60));
        peers.add("a:1");
        peers.add("b:1");
        peers.add("c:1");
        assertFalse(peers.contains("a:1"), "the oldest went first");
        assertTrue(peers.contains("b:1") && peers.contains("c:1"));
    }
}
