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
 * {@link ReceiveBudget} as JeroMQ's decoder uses it: every message, whatever its size, is reserved
 * while partial (the decoder only sets its flags and fills its buffer), so many small partial
 * messages are refused past the budget; a small one's reservation returns when it is first read
 * complete, a large one's only when its bytes are collected; a partial message that was dropped
 * (its connection died) returns its reservation once collected. A socket receives many times its
 * budget over its life, one message at a time, and never a message cut. The collector is asked to
 * run (System.gc) where a test needs a dropped message's memory back, within a bounded wait.
 */
@Timeout(60)
class ReceiveBudgetTest {
    private static final int SMALL = 65_535;
    private static final int MIB = 1 << 20;

    @Test
    void smallPartialMessagesAreCountedAndRefusedPastTheBudget() {
        ReceiveBudget budget = new ReceiveBudget(10L * SMALL);
        List<Msg> partial = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            partial.add(decoderAllocates(budget, SMALL));
        }
        assertEquals(10L * SMALL, budget.heldBytes());
        Msg refused = decoderAllocates(budget, SMALL);
        assertEquals(0, refused.size(), "past the budget a message is cut to nothing");
        assertEquals(1, budget.refused());
        assertEquals(SMALL, partial.getFirst().size(), "read complete: its reservation returns");
        assertEquals(9L * SMALL, budget.heldBytes());
        assertEquals(SMALL, decoderAllocates(budget, SMALL).buf().remaining(), "room again for one");
    }

    @Test
    void largeMessagesPastTheBudgetAreCutAndCounted() {
        ReceiveBudget budget = new ReceiveBudget(4L * MIB);
        List<Msg> held = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            Msg m = budget.allocate(MIB);
            assertEquals(MIB, m.size(), "message " + i + " fits the budget");
            held.add(m);
        }
        assertEquals(4L * MIB, budget.heldBytes(), "complete large messages stay reserved while held");
        Msg cut = budget.allocate(MIB);
        assertEquals(0, cut.size(), "the fifth would take the budget past its size: cut to nothing");
        assertEquals(1, budget.refused());
        assertEquals(4L * MIB, budget.heldBytes(), "a refused message holds nothing");
        assertEquals(4L * MIB, budget.budgetBytes());
        assertEquals(4, held.size()); // held until here: none could be collected above
    }

    @Test
    void aLargeMessageStaysReservedUntilItsBytesAreCollected() throws InterruptedException {
        ReceiveBudget budget = new ReceiveBudget(1L << 20);
        Msg large = decoderAllocates(budget, 256 * 1024);
        byte[] taken = large.data(); // complete, and the application holds its bytes
        large = null;
        for (int i = 0; i < 5; i++) {
            System.gc();
            Thread.sleep(20);
        }
        assertEquals(256 * 1024, budget.heldBytes(), "a completed large message counts while its bytes are held");
        assertTrue(taken.length > 0);
        taken = null;
        awaitHeld(budget, 0);
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
    void aDroppedPartialMessageIsReturnedOnceCollected() throws InterruptedException {
        ReceiveBudget budget = new ReceiveBudget(1L << 20);
        decoderAllocates(budget, SMALL); // its connection died: nothing completes or holds it
        assertEquals(SMALL, budget.heldBytes());
        awaitHeld(budget, 0);
    }

    @Test
    void aSocketReceivesManyTimesItsBudgetWholeOneMessageAtATime() throws InterruptedException {
        ReceiveBudget budget = new ReceiveBudget(2L * MIB);
        receiveTwelveBudgets(budget);
        // The sockets are gone, and so is the frame that held them (an interpreted frame keeps a dead local
        // reachable, and through the socket the decoder's last message): every reservation came back.
        awaitHeldAtMost(budget, 0);
    }

    private static void receiveTwelveBudgets(ReceiveBudget budget) throws InterruptedException {
        try (ZContext context = new OwnedZContext("test-receive-budget", 1)) {
            ZMQ.Socket pull = budget.apply(context.createSocket(SocketType.PULL), 2L * MIB);
            pull.setReceiveTimeOut(10_000);
            int port = pull.bindToRandomPort("tcp://127.0.0.1");
            ZMQ.Socket push = context.createSocket(SocketType.PUSH);
            push.setLinger(0);
            push.connect("tcp://127.0.0.1:" + port);
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
    }

    @Test
    void aBudgetSmallerThanOneUntrackedMessageIsRefused() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new ReceiveBudget(1_000));
        assertTrue(e.getMessage().contains("at least " + ReceiveBudget.HELD_WHILE_PARTIAL_BYTES), e.getMessage());
    }

    /** What JeroMQ's V2Decoder does with a new message before its body has come: flags, then its buffer. */
    private static Msg decoderAllocates(ReceiveBudget budget, int size) {
        Msg msg = budget.allocate(size);
        msg.setFlags(Msg.COMMAND);
        msg.buf();
        return msg;
    }

    /** Runs the collector until the budget holds {@code bytes}, for at most 10 s. */
    private static void awaitHeld(ReceiveBudget budget, long bytes) throws InterruptedException {
        awaitHeldAtMost(budget, bytes);
        assertEquals(bytes, budget.heldBytes(), "the collector returned the reservation");
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
