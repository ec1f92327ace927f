package lmcache4j.engine.security;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.Optional;

import org.junit.jupiter.api.Test;

/**
 * Which connections count as closed in the ZeroMQ greeting: only one that was certainly never greeted,
 * so that a legitimate peer is never reported as lacking the secret.
 */
class GreetingWatchTest {
    private final Object a = new Object();
    private final Object b = new Object();

    @Test
    void aConnectionDroppedBeforeAnyGreetingEndedIsReportedWithItsPeer() {
        GreetingWatch w = new GreetingWatch();
        w.accepted(a, "127.0.0.1:40000");
        assertEquals(Optional.of("127.0.0.1:40000"), w.disconnected(a));
        assertEquals(Optional.empty(), w.disconnected(a), "each connection once");
    }

    @Test
    void aConnectionWhoseGreetingEndedIsNeverReported() {
        GreetingWatch w = new GreetingWatch();
        w.accepted(a, "127.0.0.1:40000");
        w.greeted();
        assertEquals(Optional.empty(), w.disconnected(a), "a member that leaves later");
    }

    @Test
    void overlappingGreetingsAreForgottenNotGuessed() {
        GreetingWatch w = new GreetingWatch();
        w.accepted(a, "a");
        w.accepted(b, "b");
        w.greeted(); // a's or b's: no telling
        assertEquals(Optional.empty(), w.disconnected(b), "b may have been the greeted one");
        assertEquals(Optional.empty(), w.disconnected(a), "and a too");
    }

    @Test
    void aRefusedPeerAfterAMemberIsReported() {
        GreetingWatch w = new GreetingWatch();
        w.accepted(a, "member");
        w.greeted();
        w.accepted(b, "stranger");
        assertEquals(Optional.of("stranger"), w.disconnected(b));
        assertEquals(Optional.empty(), w.disconnected(a));
    }

    @Test
    void aConnectionAcceptedBeforeTheWatchBeganIsNotReported() {
        assertEquals(Optional.empty(), new GreetingWatch().disconnected(a));
    }
}
