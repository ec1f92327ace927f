package lmcache4j.allocator.internal.threads;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(60)
class OwnedThreadsTest {
    @Test
    void namesEveryThreadAndMakesItADaemon() throws Exception {
        OwnedThreads owned = new OwnedThreads();
        Thread one = owned.start("test-one", () -> { });
        Thread pooled = owned.platformFactory("test-pool").newThread(() -> { });
        Thread virtual = owned.virtualFactory("test-virtual").newThread(() -> { });
        Thread shared = OwnedThreads.shared("test-shared", () -> { });
        assertEquals("lmcache4j-test-one", one.getName());
        assertEquals("lmcache4j-test-pool-0", pooled.getName());
        assertEquals("lmcache4j-test-virtual-0", virtual.getName());
        assertEquals("lmcache4j-test-shared", shared.getName());
        for (Thread t : List.of(one, pooled, virtual, shared)) {
            assertTrue(t.isDaemon(), t.getName());
        }
        assertTrue(virtual.isVirtual());
        assertTrue(owned.join(Duration.ofSeconds(5)));
    }

    @Test
    void joinWaitsForEveryStartedThreadAnExecutorsIncluded() throws Exception {
        OwnedThreads owned = new OwnedThreads();
        CountDownLatch started = new CountDownLatch(6);
        CountDownLatch release = new CountDownLatch(1);
        ExecutorService pool = Executors.newFixedThreadPool(3, owned.platformFactory("test-join"));
        ExecutorService perTask = Executors.newThreadPerTaskExecutor(owned.virtualFactory("test-join-v"));
        for (int i = 0; i < 3; i++) {
            pool.execute(() -> held(started, release));
            perTask.execute(() -> held(started, release));
        }
        pool.shutdown();
        perTask.shutdown();
        assertTrue(started.await(10, TimeUnit.SECONDS));
        assertEquals(6, running("lmcache4j-test-join-"), "virtual threads are listed too");
        assertFalse(owned.join(Duration.ofMillis(50)), "threads are still held");
        assertEquals(6, owned.live().size());
        release.countDown();
        assertTrue(owned.join(Duration.ofSeconds(10)));
        assertTrue(owned.live().isEmpty());
        assertEquals(0, running("lmcache4j-test-join-"));
    }

    @Test
    void joinSkipsTheCallingThreadAndThreadsNeverStarted() throws Exception {
        OwnedThreads owned = new OwnedThreads();
        owned.platform("test-never", () -> { });
        boolean[] joined = new boolean[1];
        Thread self = owned.start("test-self", () -> joined[0] = owned.join(Duration.ofSeconds(5)));
        self.join(TimeUnit.SECONDS.toMillis(10));
        assertTrue(joined[0]);
        assertTrue(owned.join(Duration.ofSeconds(5)));
    }

    @Test
    void forgetsThreadsThatEnded() throws Exception {
        OwnedThreads owned = new OwnedThreads();
        for (int i = 0; i < 1_000; i++) {
            owned.start("test-many-" + i, () -> { }).join();
        }
        assertTrue(owned.recorded() < 200, "a thread per connection must not grow the record: " + owned.recorded());
        assertTrue(owned.join(Duration.ofSeconds(5)));
    }

    private static long running(String prefix) {
        return OwnedThreads.running().stream().filter(t -> t.getName().startsWith(prefix)).count();
    }

    private static void held(CountDownLatch started, CountDownLatch release) {
        started.countDown();
        try {
            release.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
