package lmcache4j.engine.zmq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;

import zmq.Msg;

/**
 * {@link ReceiveBudget} as JeroMQ's decoder uses it: every message, whatever its size, is reserved
 * while partial (the decoder only sets its flags and fills its buffer), so many small partial
 * messages are refused past the budget; a small one's reservation returns when it is first read
 * complete, a large one's only when its bytes are collected; a partial message that was dropped
 * (its connection died) returns its reservation once collected.
 */
class ReceiveBudgetTest {
    private static final int SMALL = 65_535;

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
    void aDroppedPartialMessageIsReturnedOnceCollected() throws InterruptedException {
        ReceiveBudget budget = new ReceiveBudget(1L << 20);
        decoderAllocates(budget, SMALL); // its connection died: nothing completes or holds it
        assertEquals(SMALL, budget.heldBytes());
        awaitHeld(budget, 0);
    }

    @Test
    void aBudgetSmallerThanOneUntrackedMessageIsRefused() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new ReceiveBudget(1_000));
        assertTrue(e.getMessage().contains("at least"), e.getMessage());
    }

    /** What JeroMQ's V2Decoder does with a new message before its body has come: flags, then its buffer. */
    private static Msg decoderAllocates(ReceiveBudget budget, int size) {
        Msg msg = budget.allocate(size);
        msg.setFlags(Msg.COMMAND);
        msg.buf();
        return msg;
    }

    private static void awaitHeld(ReceiveBudget budget, long bytes) throws InterruptedException {
        for (int i = 0; i < 100 && budget.heldBytes() != bytes; i++) {
            System.gc();
            Thread.sleep(20);
        }
        assertEquals(bytes, budget.heldBytes(), "the collector returned the reservation");
    }
}
