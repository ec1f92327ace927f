package lmcache4j.engine.storage.disk;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;

import org.junit.jupiter.api.Test;

class IoExecutorTest {
    @Test
    void prefetchRunsBeforeDeleteBeforePutAndPutsAreBounded() throws InterruptedException {
        IoExecutor io = new IoExecutor("test", 1, 2);
        CountDownLatch gate = new CountDownLatch(1);
        CountDownLatch taken = new CountDownLatch(1);
        List<String> order = Collections.synchronizedList(new ArrayList<>());
        assertTrue(io.submit(IoExecutor.Priority.PUT, () -> {
            taken.countDown();
            try {
                gate.await(); // holds the only thread while the rest is queued
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }));
        assertTrue(taken.await(10, java.util.concurrent.TimeUnit.SECONDS), "the thread took the blocking job");
        assertTrue(io.submit(IoExecutor.Priority.PUT, () -> order.add("put1")));
        assertTrue(io.submit(IoExecutor.Priority.PUT, () -> order.add("put2")));
        assertFalse(io.submit(IoExecutor.Priority.PUT, () -> order.add("put3")), "the put queue holds 2");
        assertTrue(io.submit(IoExecutor.Priority.DELETE, () -> order.add("delete")));
        assertTrue(io.submit(IoExecutor.Priority.PREFETCH, () -> order.add("prefetch")));
        gate.countDown();
        assertTrue(io.close(5_000));
        assertEquals(List.of("prefetch", "delete", "put1", "put2"), order);
        assertFalse(io.submit(IoExecutor.Priority.PREFETCH, () -> { }), "closed: nothing more is queued");
    }
}
