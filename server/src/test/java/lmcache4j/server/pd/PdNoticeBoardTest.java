package lmcache4j.server.pd;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;

import org.junit.jupiter.api.Test;

/**
 * The proxy's notices with a decoder of two tensor-parallel ranks: a request goes on only once both
 * ranks' notices came (one alone waits out its timeout); a third, or one for a request the proxy
 * never sent, is refused and counted; the table holds at most its capacity and forgets each request.
 */
class PdNoticeBoardTest {
    @Test
    void aRequestOfTwoRanksWaitsForBothNotices() throws InterruptedException {
        PdNoticeBoard board = new PdNoticeBoard(4);
        assertTrue(board.expect("r1", 2));
        assertEquals(PdNoticeBoard.Posted.COUNTED, board.post("r1"));
        long t0 = System.nanoTime();
        assertFalse(board.await("r1", Duration.ofMillis(200)), "one rank's notice is not enough");
        assertTrue(System.nanoTime() - t0 >= 190_000_000L, "it waited its timeout out");
        assertEquals(1, board.timeouts());
        assertEquals(0, board.size(), "forgotten after its wait");

        assertTrue(board.expect("r2", 2));
        Thread.ofVirtual().start(() -> {
            board.post("r2");
            board.post("r2");
        });
        assertTrue(board.await("r2", Duration.ofSeconds(10)));
        assertEquals(PdNoticeBoard.Posted.UNKNOWN, board.post("r2"), "a late notice: its request is gone");
    }

    @Test
    void extraAndUnknownNoticesAreRefusedAndCounted() {
        PdNoticeBoard board = new PdNoticeBoard(4);
        board.expect("r", 1);
        assertEquals(PdNoticeBoard.Posted.COUNTED, board.post("r"));
        assertEquals(PdNoticeBoard.Posted.EXTRA, board.post("r"));
        assertEquals(PdNoticeBoard.Posted.UNKNOWN, board.post("forged"));
        assertEquals(1, board.extra());
        assertEquals(1, board.unknown());
        assertEquals(1, board.size(), "an unknown notice adds nothing to the table");
    }

    @Test
    void theTableHoldsAtMostItsCapacity() {
        PdNoticeBoard board = new PdNoticeBoard(2);
        assertTrue(board.expect("a", 1));
        assertTrue(board.expect("b", 1));
        assertFalse(board.expect("c", 1));
        assertFalse(board.expect("a", 1), "an id once");
        board.forget("a");
        assertTrue(board.expect("c", 1));
    }
}
