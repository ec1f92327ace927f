package lmcache4j.server.controller.registry;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Optional;

import org.junit.jupiter.api.Test;

import lmcache4j.server.controller.index.ChunkIndex;
import lmcache4j.server.controller.index.Holder;

class WorkerRegistryTest {
    private final FakeClock clock = new FakeClock();
    private final ChunkIndex index = new ChunkIndex();
    private final FullSyncTracker sync = new FullSyncTracker(index);
    private final WorkerRegistry registry = new WorkerRegistry(index, sync, clock, Duration.ofSeconds(10));
    private final WorkerKey a0 = new WorkerKey("a", 0);
    private final WorkerKey b0 = new WorkerKey("b", 0);

    @Test
    void aWorkerThatMissesHeartbeatsIsDroppedWithEveryEntryItHad() {
        registry.register(a0, "127.0.0.1", 9000, Optional.empty());
        registry.register(b0, "127.0.0.1", 9001, Optional.empty());
        index.admit(new Holder("a", 0, "LocalCPUBackend"), 1);
        index.admit(new Holder("a", 0, "LocalDiskBackend"), 2);
        index.admit(new Holder("b", 0, "LocalCPUBackend"), 1);
        clock.advance(Duration.ofSeconds(6));
        assertEquals(WorkerRegistry.Outcome.KNOWN, registry.heartbeat(b0, "127.0.0.1", 9001, Optional.empty()), "b is known");
        assertEquals(List.of(), registry.dropExpired());
        clock.advance(Duration.ofSeconds(5)); // a: 11 s without a beat; b: 5 s
        assertEquals(List.of(a0), registry.dropExpired());
        assertFalse(registry.isRegistered(a0));
        assertEquals(List.of(new Holder("b", 0, "LocalCPUBackend")), index.holdersOf(1));
        assertEquals(List.of(), index.holdersOf(2));
        assertEquals(1, index.entries());
        clock.advance(Duration.ofSeconds(5)); // b: exactly the timeout since its beat is still alive
        assertEquals(List.of(), registry.dropExpired());
        clock.advance(Duration.ofMillis(1));
        assertEquals(List.of(b0), registry.dropExpired());
        assertEquals(0, index.entries());
    }

    @Test
    void aHeartbeatFromAnUnknownWorkerRegistersItAndAsksForAFullSync() {
        assertEquals(WorkerRegistry.Outcome.NEW, registry.heartbeat(a0, "10.0.0.1", 9000, Optional.of("tcp://10.0.0.1:8200")));
        assertTrue(registry.isRegistered(a0));
        assertEquals("10.0.0.1:9000", registry.workers().getFirst().replyAddress());
        assertEquals(WorkerRegistry.Outcome.KNOWN, registry.heartbeat(a0, "10.0.0.1", 9000, Optional.empty()));
    }

    @Test
    void registeringAgainOrDeregisteringDropsTheWorkersEntries() {
        registry.register(a0, "127.0.0.1", 9000, Optional.empty());
        index.admit(new Holder("a", 0, "LocalCPUBackend"), 1);
        assertEquals(WorkerRegistry.Outcome.KNOWN, registry.register(a0, "127.0.0.1", 9000, Optional.empty()));
        assertEquals(0, index.entries());
        index.admit(new Holder("a", 0, "LocalCPUBackend"), 1);
        assertEquals(1, registry.deregister(a0, "127.0.0.1", 9000));
        assertEquals(0, registry.deregister(a0, "127.0.0.1", 9000));
        assertEquals(List.of(), registry.workers());
    }

    @Test
    void theFirstRegistrantKeepsItsIdentityUntilItLeavesOrTimesOut() {
        registry.register(a0, "127.0.0.1", 9000, Optional.of("tcp://127.0.0.1:8200"));
        index.admit(new Holder("a", 0, "LocalCPUBackend"), 1);
        assertEquals(WorkerRegistry.Outcome.TAKEN, registry.register(a0, "10.6.6.6", 9000, Optional.of("tcp://127.0.0.1:8200")));
        assertEquals(WorkerRegistry.Outcome.TAKEN, registry.register(a0, "127.0.0.1", 9000, Optional.of("tcp://10.6.6.6:8200")),
                "another P2P URL is another identity");
        assertEquals(WorkerRegistry.Outcome.TAKEN, registry.heartbeat(a0, "10.6.6.6", 9000, Optional.empty()));
        assertEquals(-1, registry.deregister(a0, "10.6.6.6", 9000));
        assertEquals(1, index.entries(), "the entries survive every attempt");
        assertEquals("127.0.0.1:9000", registry.workers().getFirst().replyAddress());
        clock.advance(Duration.ofSeconds(11)); // the first registrant died: its identity is free again
        registry.dropExpired();
        assertEquals(WorkerRegistry.Outcome.NEW, registry.register(a0, "127.0.0.1", 9002, Optional.empty()));
    }

    @Test
    void newWorkersBeyondTheCapAreRefusedUntilOneLeaves() {
        WorkerRegistry capped = new WorkerRegistry(index, sync, clock, Duration.ofSeconds(10), 2);
        WorkerKey c0 = new WorkerKey("c", 0);
        assertEquals(WorkerRegistry.Outcome.NEW, capped.register(a0, "127.0.0.1", 9000, Optional.empty()));
        assertEquals(WorkerRegistry.Outcome.NEW, capped.heartbeat(b0, "127.0.0.1", 9001, Optional.empty()));
        assertEquals(WorkerRegistry.Outcome.FULL, capped.register(c0, "127.0.0.1", 9002, Optional.empty()));
        assertEquals(WorkerRegistry.Outcome.FULL, capped.heartbeat(c0, "127.0.0.1", 9002, Optional.empty()));
        assertFalse(capped.isRegistered(c0));
        assertEquals(WorkerRegistry.Outcome.KNOWN, capped.register(a0, "127.0.0.1", 9000, Optional.empty()),
                "a registered worker may register again at the cap");
        capped.deregister(b0);
        assertEquals(WorkerRegistry.Outcome.NEW, capped.register(c0, "127.0.0.1", 9002, Optional.empty()));
        assertEquals(2, capped.workers().size());
    }

    @Test
    void aFullSyncReplacesTheLocationsEntriesAndReportsMissingBatches() {
        registry.register(a0, "127.0.0.1", 9000, Optional.empty());
        Holder cpu = new Holder("a", 0, "LocalCPUBackend");
        Holder disk = new Holder("a", 0, "LocalDiskBackend");
        index.admit(cpu, 100);
        index.admit(disk, 200);
        assertEquals(Optional.empty(), sync.start(a0, "LocalCPUBackend", "s1", 4, 3));
        assertTrue(sync.isSyncing(a0, "LocalCPUBackend"));
        assertFalse(sync.isSyncing(a0, "LocalDiskBackend"));
        assertEquals(List.of(disk), index.holdersOf(200), "the other location is untouched");
        assertEquals(List.of(), index.holdersOf(100), "the synced location starts empty");
        assertTrue(sync.batch(a0, "LocalCPUBackend", "s1", 0, new long[]{1, 2}, 2));
        assertFalse(sync.batch(a0, "LocalCPUBackend", "other-sync", 1, new long[]{9}, 1));
        assertFalse(sync.batch(a0, "LocalCPUBackend", "s1", 3, new long[]{9}, 1), "batch id beyond batch_count");
        assertTrue(sync.batch(a0, "LocalCPUBackend", "s1", 2, new long[]{4}, 1));
        FullSyncTracker.Status before = sync.status(a0, "s1");
        assertFalse(before.isComplete());
        assertEquals(List.of(), before.missingBatches(), "nothing is missing before the end arrives");
        assertEquals(2.0 / 3, before.globalProgress(), 1e-9);
        assertTrue(sync.end(a0, "LocalCPUBackend", "s1", 4));
        FullSyncTracker.Status ended = sync.status(a0, "s1");
        assertEquals(List.of(1L), ended.missingBatches());
        assertFalse(ended.canExitFreeze());
        assertTrue(sync.batch(a0, "LocalCPUBackend", "s1", 1, new long[]{3}, 1));
        FullSyncTracker.Status done = sync.status(a0, "s1");
        assertTrue(done.isComplete() && done.canExitFreeze());
        assertEquals(1.0, done.globalProgress());
        assertFalse(sync.isSyncing(a0, "LocalCPUBackend"));
        assertEquals(4, index.keysOf(cpu).length);
        assertEquals(Optional.of("batch_count must be 0..16777216, was -1"), sync.start(a0, "LocalCPUBackend", "s2", 0, -1));
    }
}
