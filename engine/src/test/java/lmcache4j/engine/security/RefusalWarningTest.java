package lmcache4j.engine.security;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.System.Logger.Level;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

import org.junit.jupiter.api.Test;

/**
 * The refusal warning of a watched socket, on a clock the test moves: said at once, then at most
 * once a minute however many peers are refused in between, each time naming the peer, the socket,
 * the reason and the count so far.
 */
class RefusalWarningTest {
    private static final long MINUTE = RefusalWarning.INTERVAL.toNanos();

    @Test
    void theFirstRefusalIsSaidAtOnceWithPeerSocketReasonAndCount() {
        RecordingLogger log = new RecordingLogger();
        new RefusalWarning(log, () -> 5_000L).refused("10.0.0.7:41234", "the controller's reply socket", "no CURVE", 1);
        assertEquals(List.of("refused a connection from 10.0.0.7:41234 to the controller's reply socket: no CURVE (engines: "
                + "deployment_secret_file; demo: --secret-file; the same file as this process's). 1 handshakes refused "
                + "so far; this is said at most once a minute"), log.at(Level.WARNING));
    }

    @Test
    void afterAWarningTheNextComesAMinuteLaterNotBefore() {
        RecordingLogger log = new RecordingLogger();
        AtomicLong now = new AtomicLong(1_000_000L);
        RefusalWarning warning = new RefusalWarning(log, now::get);
        warning.refused("a", "s", "why", 1);
        now.addAndGet(1);
        warning.refused("b", "s", "why", 2);
        now.addAndGet(MINUTE - 2);
        warning.refused("c", "s", "why", 3);
        assertEquals(1, log.at(Level.WARNING).size(), "within the minute after a warning, nothing: " + log.at(Level.WARNING));
        now.addAndGet(1); // exactly a minute after the first
        warning.refused("d", "s", "why", 4);
        assertEquals(2, log.at(Level.WARNING).size(), "a minute after the first, the second: " + log.at(Level.WARNING));
        assertEquals(true, log.at(Level.WARNING).get(1).startsWith("refused a connection from d to s: why"),
                log.at(Level.WARNING).get(1));
        assertEquals(true, log.at(Level.WARNING).get(1).contains(". 4 handshakes refused so far"), "the count of all four");
        now.addAndGet(MINUTE - 1);
        warning.refused("e", "s", "why", 5);
        assertEquals(2, log.at(Level.WARNING).size(), "the minute counts from the second warning");
    }

    @Test
    void aClockThatWrapsPastLongMaxStillWaitsTheMinute() {
        RecordingLogger log = new RecordingLogger();
        AtomicLong now = new AtomicLong(Long.MAX_VALUE - 10);
        RefusalWarning warning = new RefusalWarning(log, now::get);
        warning.refused("a", "s", "why", 1);
        now.addAndGet(20); // wraps to a negative value, 20 ns later
        warning.refused("b", "s", "why", 2);
        assertEquals(1, log.at(Level.WARNING).size(), "20 ns after a warning, across the wrap: " + log.at(Level.WARNING));
        now.addAndGet(MINUTE);
        warning.refused("c", "s", "why", 3);
        assertEquals(2, log.at(Level.WARNING).size(), "a minute after, across the wrap");
    }
}
