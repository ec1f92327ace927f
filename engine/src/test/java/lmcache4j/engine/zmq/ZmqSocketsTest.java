package lmcache4j.engine.zmq;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.zeromq.SocketType;
import org.zeromq.ZMQ;

/**
 * Whose threads lmcache4j's ZeroMQ contexts run on: lmcache4j's, named after the component, and
 * gone once the context is closed. (How they connect without stalling: {@code PollerRepairTest}.)
 */
@Timeout(30)
class ZmqSocketsTest {
    @Test
    void anOwnedContextRunsOnNamedThreadsAndJoinsThemWhenClosed() {
        String prefix = "lmcache4j-zmq-sockets-test-zmq-";
        OwnedZContext context = new OwnedZContext("zmq-sockets-test", 1);
        ZMQ.Socket pull = context.createSocket(SocketType.PULL);
        pull.bindToRandomPort("tcp://127.0.0.1");
        assertFalse(threads(prefix).isEmpty(), "JeroMQ's threads carry the component's name: " + threads("lmcache4j-"));
        context.close();
        assertTrue(threads(prefix).isEmpty(), "closing the context joined them: " + threads(prefix));
        assertTrue(context.isClosed());
    }

    private static List<String> threads(String prefix) {
        return Thread.getAllStackTraces().keySet().stream().filter(Thread::isAlive).map(Thread::getName)
                .filter(n -> n.startsWith(prefix)).toList();
    }
}
