package lmcache4j.engine.remote;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.UncheckedIOException;
import java.net.ConnectException;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.List;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeoutException;

import lmcache4j.allocator.MemoryObj;
import lmcache4j.engine.remote.RemoteHealth.State;
import lmcache4j.engine.storage.AllocationMode;
import lmcache4j.engine.storage.TestChunks;
import lmcache4j.engine.storage.cpu.LocalCpuBackend;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** The remote tier's account of its store: healthy, degraded or unreachable, since when, and why. */
@Timeout(60)
class RemoteHealthTest {
    /** A clock the test moves. */
    private static final class TestClock implements InstantSource {
        Instant now = Instant.parse("2025-01-01T00:00:00Z");

        @Override
        public Instant instant() {
            return now;
        }

        void advance(double seconds) {
            now = now.plusNanos((long) (seconds * 1e9));
        }
    }

    @Test
    void failuresInARowMakeTheStoreDegradedThenUnreachableAndASuccessHealsIt() {
        TestClock clock = new TestClock();
        RemoteHealthTracker tracker = new RemoteHealthTracker(clock);
        assertEquals(State.HEALTHY, tracker.snapshot().state());
        assertEquals("healthy", tracker.snapshot().describe());

        clock.advance(1);
        tracker.failed(new CompletionException(new ConnectException("Connection refused")));
        RemoteHealth one = tracker.snapshot();
        assertEquals(State.DEGRADED, one.state());
        assertEquals("Connection refused", one.lastError());
        clock.advance(2);
        tracker.failed(new ConnectException("Connection refused"));
        tracker.failed(new ConnectException("Connection refused"));
        clock.advance(9.3);
        RemoteHealth down = tracker.snapshot();
        assertEquals(State.UNREACHABLE, down.state());
        assertEquals(Duration.ofMillis(11_300), down.stateFor(), "since the first failure of the run");
        assertEquals(3, down.consecutiveFailures());
        assertFalse(down.everSucceeded());
        assertTrue(down.lastSuccess().isEmpty());
        assertEquals(clock.now.minusMillis(11_300), down.firstFailure().orElseThrow());
        assertEquals("unreachable for 11.3 s (Connection refused), never answered", down.describe());

        tracker.succeeded();
        clock.advance(4);
        RemoteHealth back = tracker.snapshot();
        assertEquals(State.HEALTHY, back.state());
        assertTrue(back.everSucceeded());
        assertEquals(0, back.consecutiveFailures());
        assertEquals(3, back.failures());
        assertEquals("healthy for 4.0 s (3 operations failed earlier, last: Connection refused)", back.describe());

        tracker.failed(new TimeoutException("no answer to an operation within 5.0 s"));
        RemoteHealth slow = tracker.snapshot();
        assertEquals(State.DEGRADED, slow.state());
        assertEquals("degraded for 0.0 s (no answer to an operation within 5.0 s)", slow.describe());
    }

    @Test
    void aFailedPingMakesTheStoreUnreachableAtOnce() {
        RemoteHealthTracker tracker = new RemoteHealthTracker(new TestClock());
        tracker.succeeded();
        tracker.pinged(false, new TimeoutException("no answer to a ping within 5.0 s"));
        assertEquals(State.UNREACHABLE, tracker.snapshot().state());
        tracker.pinged(true, null);
        assertEquals(State.HEALTHY, tracker.snapshot().state());
    }

    @Test
    void aReasonIsTheInnermostCauseInOneLine() {
        assertEquals("Connection refused: /127.0.0.1:1", RemoteHealthTracker.reason(new CompletionException(
                new RuntimeException("Unable to connect to 127.0.0.1:1", new ConnectException("Connection refused: /127.0.0.1:1")))));
        assertEquals("access denied: /shared/x.data", RemoteHealthTracker.reason(
                new UncheckedIOException(new java.io.IOException("FS chunk store: cannot write", new AccessDeniedException("/shared/x.data")))));
        assertEquals("Not a directory: /a/b", RemoteHealthTracker.reason(
                new java.nio.file.FileSystemException("/a/b", null, "Not a directory")));
        assertEquals("null pointer", RemoteHealthTracker.reason(new NullPointerException()));
        assertEquals("two lines", RemoteHealthTracker.reason(new IllegalStateException("two\n lines")));
    }

    private static void putChunks(RemoteBackend remote, LocalCpuBackend cpu, int n) throws InterruptedException {
        List<MemoryObj> objs = new java.util.ArrayList<>();
        for (int i = 0; i < n; i++) {
            objs.add(TestChunks.chunk(cpu, i, AllocationMode.EVICT).orElseThrow());
        }
        remote.batchedSubmitPut(TestChunks.keys(0, n), objs);
        remote.awaitPuts();
        objs.forEach(MemoryObj::release);
    }

    @Test
    void aRedisPortWithNothingListeningIsUnreachableNotHealthy() throws Exception {
        try (LocalCpuBackend cpu = TestChunks.cpuTier(8, "LRU", 1);
             RemoteBackend remote = new RemoteBackend(RemoteConnectors.create("redis://127.0.0.1:1?timeout_ms=2000"), cpu,
                     3, 3600, 1)) {
            putChunks(remote, cpu, 4);
            assertFalse(remote.contains(TestChunks.key(0), false));
            RemoteBackend.Stats st = remote.stats();
            assertEquals(0, st.puts());
            assertEquals(4, st.failedPuts());
            RemoteHealth h = st.health();
            assertEquals(State.UNREACHABLE, h.state(), h.toString());
            assertFalse(h.everSucceeded());
            assertEquals(5, h.consecutiveFailures(), h.toString());
            assertTrue(h.lastError().toLowerCase(java.util.Locale.ROOT).contains("refused"), h.lastError());
            assertTrue(h.describe().startsWith("unreachable for "), h.describe());
            assertTrue(h.describe().endsWith(", never answered"), h.describe());
        }
    }

    @Test
    void anFsStoreThatCannotBeWrittenIsUnreachableWithTheFileSystemsReason(@TempDir Path tmp) throws Exception {
        Path shared = tmp.resolve("shared");
        try (LocalCpuBackend cpu = TestChunks.cpuTier(8, "LRU", 1);
             RemoteBackend remote = new RemoteBackend(RemoteConnectors.create("fs://" + shared), cpu, 3, 3600, 1)) {
            // Root may write into any directory, so the store's directory becomes a file instead.
            Files.delete(shared);
            Files.writeString(shared, "not a directory");
            putChunks(remote, cpu, 3);
            RemoteHealth h = remote.stats().health();
            assertEquals(0, remote.stats().puts());
            assertEquals(State.UNREACHABLE, h.state(), h.toString());
            assertTrue(h.lastError().contains("Not a directory") && h.lastError().contains(shared.toString()), h.lastError());

            Files.delete(shared); // the share comes back
            Files.createDirectory(shared);
            putChunks(remote, cpu, 1);
            RemoteHealth healed = remote.stats().health();
            assertEquals(State.HEALTHY, healed.state(), healed.toString());
            assertEquals(1, remote.stats().puts());
            assertTrue(healed.everSucceeded() && healed.failures() == 3 && healed.lastSuccess().isPresent(), healed.toString());
        }
    }
}
