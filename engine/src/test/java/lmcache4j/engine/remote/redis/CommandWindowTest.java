package lmcache4j.engine.remote.redis;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;

/** {@link CommandWindow}: never more than its limit in flight, waiting commands start in order, failures free their place. */
class CommandWindowTest {
    @Test
    void holdsBackCommandsBeyondItsLimitAndStartsThemInOrderAsOthersComplete() throws Exception {
        CommandWindow window = new CommandWindow(2, Runnable::run);
        List<CompletableFuture<Integer>> commands = new ArrayList<>();
        List<Integer> started = new ArrayList<>();
        List<CompletableFuture<Integer>> results = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            int n = i;
            CompletableFuture<Integer> command = new CompletableFuture<>();
            commands.add(command);
            results.add(window.submit(() -> {
                started.add(n);
                return command;
            }));
        }
        assertEquals(List.of(0, 1), started);
        assertEquals(2, window.inflight());
        commands.get(1).complete(1);
        assertEquals(List.of(0, 1, 2), started);
        commands.get(0).completeExceptionally(new IllegalStateException("lost"));
        assertEquals(List.of(0, 1, 2, 3), started, "a failed command frees its place too");
        ExecutionException e = assertThrows(ExecutionException.class, () -> results.get(0).get(1, TimeUnit.SECONDS));
        assertEquals("lost", e.getCause().getMessage());
        assertEquals(1, results.get(1).get(1, TimeUnit.SECONDS));
        assertFalse(results.get(4).isDone());
        for (int i = 2; i < 5; i++) {
            commands.get(i).complete(i);
        }
        assertEquals(List.of(0, 1, 2, 3, 4), started);
        assertEquals(0, window.inflight());
        assertEquals(4, results.get(4).get(1, TimeUnit.SECONDS));
    }

    @Test
    void aCommandThatThrowsIsAFailedResultAndManyFailingAtOnceDoNotNest() throws Exception {
        CommandWindow window = new CommandWindow(1, Runnable::run);
        CompletableFuture<Void> first = new CompletableFuture<>();
        window.submit(() -> first);
        AtomicInteger ran = new AtomicInteger();
        List<CompletableFuture<Void>> failing = new ArrayList<>();
        for (int i = 0; i < 20_000; i++) {
            failing.add(window.submit(() -> {
                ran.incrementAndGet();
                throw new IllegalStateException("no connection");
            }));
        }
        first.complete(null);
        assertEquals(20_000, ran.get());
        assertTrue(failing.stream().allMatch(CompletableFuture::isCompletedExceptionally));
        assertEquals(0, window.inflight());
        assertThrows(IllegalArgumentException.class, () -> new CommandWindow(0, Runnable::run));
    }
}
