package lmcache4j.bench.zmq;

import org.zeromq.ZContext;

/**
 * The one place lmcache4j makes a JeroMQ context that is not an {@code OwnedZContext}
 * ({@code ZmqContextRuleTest} names it): {@code bench zmq} counts the connects that stall without
 * lmcache4j's repair, against those with it and libzmq's, in the same run.
 */
final class JeromqAsShipped {
    private JeromqAsShipped() {
    }

    static ZContext context() {
        return new ZContext(1);
    }
}
