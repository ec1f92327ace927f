package lmcache4j.engine.zmq;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

import zmq.Msg;

/**
 * The receive budget bounds what large messages hold at once, and gets every reservation back
 * once its message is garbage: a socket receives many times its budget over its life, one message
 * at a time, and never a message cut. The collector is asked to run (System.gc) where a test needs
 * a dropped message's memory back; the reference queue is then drained within a bounded wait.
 */
@Timeout(60)
class ReceiveBudgetTest {
    private static final int MIB = 1 << 20;

    @Test
    void theBudgetRefusesPastItsSizeCutsTheMessageAndCountsIt() {
        ReceiveBudget budget = new ReceiveBudget(4L * MIB);
        List<Msg> held = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            Msg m = budget.allocate(MIB);
            assertEquals(MIB, m.size(), "message " + i + " fits the budget");
            held.add(m);
        }
        assertEquals(4L * MIB, budget.heldBytes());
        Msg cut = budget.allocate(MIB);
        assertEquals(0, cut.size(), "the fifth would take the budget past its size: cut to nothing");
        assertEquals(1, budget.refused());
        assertEquals(4L * MIB, budget.heldBytes(), "a refused message holds nothing");

        Msg small = budget.allocate(ReceiveBudget.UNTRACKED_BYTES);
        assertEquals(ReceiveBudget.UNTRACKED_BYTES, small.size(), "a control message is never refused");
        assertEquals(4L * MIB, budget.heldBytes(), "nor counted");
        Msg justOver = budget.allocate(ReceiveBudget.UNTRACKED_BYTES + 1);
        assertEquals(0, justOver.size(), "one byte more is tracked, and past the budget");
        assertEquals(2, budget.refused());
        assertEquals(4L * MIB, budget.budgetBytes());
        assertEquals(4, held.size()); // held until here: none could be collected above
    }

    @Test
    void everyReservationComesBackOnceItsMessageIsGarbage() throws InterruptedException {
        ReceiveBudget budget = new ReceiveBudget(4L * MIB);
        for (int i = 0; i < 40; i++) { // ten budgets' worth over time
            Msg m = budget.allocate(MIB);
            assertEquals(MIB, m.size(), "message " + i + " (the budget holds " + budget.heldBytes() + " bytes)");
            m = null; // the application took it and let it go
            awaitHeld(budget, 0);
        }
        assertEquals(0, budget.refused());
    }

    @Test
    void aFullBudgetTakesTheNextMessageOnceTheEarlierOnesAreCollected() throws InterruptedException {
        ReceiveBudget budget = new ReceiveBudget(2L * MIB);
        List<Msg> held = new ArrayList<>(List.of(budget.allocate(MIB), budget.allocate(MIB)));
        assertEquals(0, budget.allocate(MIB).size(), "full");
        held.clear(); // both messages were taken and dropped
        // The next reservation itself finds them collected: nothing else reads the reference queue here.
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        Msg next;
        while ((next = budget.allocate(MIB)).size() == 0) {
            if (System.nanoTime() > deadline) {
                fail("the budget never took a message again (" + budget.refused() + " refused)");
            }
            System.gc();
            Thread.sleep(20);
        }
        assertEquals(MIB, next.size());
    }

    @Test
    void aSocketReceivesManyTimesItsBudgetWholeOneMessageAtATime() throws InterruptedException {
        ReceiveBudget budget = new ReceiveBudget(2L * MIB);
        try (ZContext context = new ZContext(1)) {
            ZMQ.Socket pull = budget.apply(context.createSocket(SocketType.PULL), 2L * MIB);
            pull.setReceiveTimeOut(10_000);
            int port = pull.bindToRandomPort("tcp://127.0.0.1");
            ZMQ.Socket push = context.createSocket(SocketType.PUSH);
            push.setLinger(0);
            ZmqConnect.connect(push, "tcp://127.0.0.1:" + port);
            for (int i = 0; i < 24; i++) { // twelve budgets' worth
                byte[] sent = new byte[MIB / 2];
                Arrays.fill(sent, (byte) i);
                assertTrue(push.send(sent, 0));
                byte[] got = pull.recv(0);
                if (got == null) {
                    fail("message " + i + " never arrived");
                }
                assertArrayEquals(sent, got, "message " + i + " arrived whole (the budget held " + budget.heldBytes()
                        + " bytes, refused " + budget.refused() + ")");
                got = null;
                // JeroMQ's decoder keeps the message it decoded last until the next one starts: at most that is held.
                awaitHeldAtMost(budget, MIB / 2);
            }
            assertEquals(0, budget.refused());
        }
        awaitHeldAtMost(budget, 0); // the sockets are gone: every reservation came back
    }

    @Test
    void aBudgetSmallerThanOneUntrackedMessageIsAClearError() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> new ReceiveBudget(ReceiveBudget.UNTRACKED_BYTES - 1));
        assertTrue(e.getMessage().contains("at least " + ReceiveBudget.UNTRACKED_BYTES), e.getMessage());
        assertEquals(ReceiveBudget.UNTRACKED_BYTES, new ReceiveBudget(ReceiveBudget.UNTRACKED_BYTES).budgetBytes());
    }

    /** Runs the collector until the budget holds {@code bytes}, for at most 10 s. */
    private static void awaitHeld(ReceiveBudget budget, long bytes) throws InterruptedException {
        awaitHeldAtMost(budget, bytes);
        assertEquals(bytes, budget.heldBytes());
    }

    /** Runs the collector until the budget holds at most {@code bytes}, for at most 10 s. */
    private static void awaitHeldAtMost(ReceiveBudget budget, long bytes) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (budget.heldBytes() > bytes) {
            if (System.nanoTime() > deadline) {
                fail("the budget still holds " + budget.heldBytes() + " bytes of messages nobody holds (expected at most "
                        + bytes + ")");
            }
            System.gc();
            Thread.sleep(5);
        }
    }
}
