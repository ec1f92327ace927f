package lmcache4j.engine.zmq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.Pipe;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

import org.junit.jupiter.api.Test;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

import zmq.Ctx;
import zmq.poll.IPollEvents;
import zmq.poll.Poller;

/**
 * Connects made by an {@link OwnedZContext} do not stall in JeroMQ 0.6.0's lost poller
 * registration ({@link PollerRepair}): hundreds of PUSH sockets connect, each followed at once by a
 * burst of sends (which keeps the I/O thread's mailbox busy while the connect completes: that is
 * when a registration is lost), with JeroMQ's default 30 s handshake timer. Without the repair about
 * one connect in a hundred delivers nothing until that timer fires. The client's context has no
 * other traffic: any other connection's activity on the same I/O thread would heal the lost
 * registration as a side effect, and hide it.
 */
class PollerRepairTest {
    private static final int CONNECTS = 800;
    private static final int BURST = 2_000;
    /** Far above a loopback handshake under load (milliseconds), far below the handshake timer's 30 s. */
    private static final int FIRST_MESSAGE_MILLIS = 3_000;
    /** Ticks after the loss by which the lost handle must have been served (one, but for ticks a stall put together). */
    private static final int TICKS_TO_SERVE = 5;

    @Test
    void everyConnectDeliversItsBurstWithoutWaitingForTheHandshakeTimer() {
        try (ZContext server = new OwnedZContext("test-repair-server", 1);
                ZContext client = new OwnedZContext("test-repair-client", 1)) {
            ZMQ.Socket pull = server.createSocket(SocketType.PULL);
            int port = pull.bindToRandomPort("tcp://127.0.0.1");
            pull.setReceiveTimeOut(FIRST_MESSAGE_MILLIS);
            byte[] payload = new byte[16];
            for (int attempt = 0; attempt < CONNECTS; attempt++) {
                ZMQ.Socket push = client.createSocket(SocketType.PUSH);
                push.setLinger(0);
                push.setSndHWM(BURST * 2);
                push.connect("tcp://127.0.0.1:" + port);
                for (int i = 0; i < BURST; i++) {
                    push.send(payload, 0);
                }
                assertNotNull(pull.recv(0), "connect " + attempt + " of " + CONNECTS + " delivered nothing in "
                        + FIRST_MESSAGE_MILLIS + " ms: its registration was lost (JeroMQ's poller)");
                for (int i = 1; i < BURST; i++) {
                    assertNotNull(pull.recv(0), "connect " + attempt + ": message " + i + " of the burst is missing");
                }
                client.destroySocket(push);
            }
        }
    }

    /**
     * The repair runs only on a JeroMQ I/O thread's poller, ticks its task again and again (a task
     * that throws does not stop the ticks), and closes its pipe when the poller's loop ends.
     */
    @Test
    void theRepairTicksOnAnIoThreadsPollerAndClosesItsPipeWhenTheLoopEnds() throws InterruptedException {
        Runnable other = () -> { };
        assertSame(other, PollerRepair.around(other, "iothread-1", p -> { }), "not a poller: unchanged");
        Ctx ctx = new Ctx();
        Poller reaper = new Poller(ctx, "reaper");
        assertSame(reaper, PollerRepair.around(reaper, "reaper", p -> { }), "the reaper's poller: unchanged");
        List<String> errors = new CopyOnWriteArrayList<>();
        Handler handler = new Handler() {
            @Override
            public void publish(LogRecord record) {
                if (record.getLevel() == Level.SEVERE) {
                    errors.add(record.getMessage());
                }
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        };
        Logger log = Logger.getLogger(PollerRepair.class.getName());
        log.addHandler(handler);
        AtomicInteger ticks = new AtomicInteger();
        AtomicReference<PollerRepair> installed = new AtomicReference<>();
        AtomicReference<Poller> running = new AtomicReference<>();
        AtomicReference<Thread> loop = new AtomicReference<>();
        // JeroMQ makes its poller's thread through the context's factory, as an I/O thread's (its timers check the thread).
        ctx.setThreadFactory((body, name) -> {
            loop.set(new Thread(PollerRepair.around(body, name, p -> {
                assertSame(running.get(), p, "the task is handed its own poller");
                if (ticks.incrementAndGet() == 1) {
                    throw new IllegalStateException("a failing task (logged; the ticks go on)");
                }
            }, installed::set), "test-poller-repair"));
            return loop.get();
        });
        Poller poller = new Poller(ctx, "iothread-test");
        running.set(poller);
        poller.start();
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (ticks.get() < 3) {
            assertTrue(System.nanoTime() < deadline, "three ticks within 10 s, the first one failing: " + ticks);
            Thread.sleep(10);
        }
        log.removeHandler(handler);
        assertEquals(List.of("a task on a ZeroMQ I/O thread's tick failed: java.lang.IllegalStateException: a failing task"
                + " (logged; the ticks go on)"), errors, "the failing task is logged once, as an error");
        assertTrue(installed.get().holdsPipe(), "the pipe is open while the poller runs");
        poller.stop();
        loop.get().join(10_000);
        assertFalse(loop.get().isAlive(), "the poller's loop ended");
        assertFalse(installed.get().holdsPipe(), "both ends of the pipe are closed with the loop");
        ctx.terminate();
    }

    /**
     * The loss itself, made on purpose in a poller of the test's own, and its repair. Once a channel's
     * first handle is registered, a tick's task cancels that handle and adds a new handle for the same
     * channel with a byte waiting (what a completing connect does), so JeroMQ's pass over its handles
     * in that loop iteration finds the old key still on the channel and skips the new handle. Nothing
     * else in this poller changes its handles: only a later tick's pass registers it, and the byte is
     * served in that iteration. Each step runs on the poller's thread in JeroMQ's fixed order (timers,
     * the pass, the select), so the outcome does not depend on timing; the check waits
     * {@value #TICKS_TO_SERVE} ticks rather than one because JeroMQ runs a tick that came due while the
     * previous one ran (a stalled thread) in the same iteration, before one pass.
     */
    @Test
    void aRegistrationLostOnPurposeIsServedByALaterTick() throws IOException, InterruptedException {
        Pipe channel = Pipe.open();
        channel.source().configureBlocking(false);
        AtomicInteger ticks = new AtomicInteger();
        AtomicInteger lossTick = new AtomicInteger();
        AtomicInteger servedAtTick = new AtomicInteger(-1);
        AtomicBoolean oldServed = new AtomicBoolean();
        AtomicReference<String> verdict = new AtomicReference<>();
        IPollEvents oldHandler = reader(channel, () -> oldServed.set(true));
        IPollEvents newHandler = reader(channel, () -> servedAtTick.compareAndSet(-1, ticks.get()));
        AtomicReference<Poller.Handle> oldHandle = new AtomicReference<>();
        AtomicReference<Thread> loop = new AtomicReference<>();
        Ctx ctx = new Ctx();
        ctx.setThreadFactory((body, name) -> {
            loop.set(new Thread(PollerRepair.around(body, name, p -> {
                int tick = ticks.incrementAndGet();
                if (oldHandle.get() == null) { // registered by this iteration's pass
                    oldHandle.set(p.addHandle(channel.source(), oldHandler));
                    p.setPollIn(oldHandle.get());
                } else if (lossTick.get() == 0 && channel.source().isRegistered()) {
                    p.removeHandle(oldHandle.get()); // the connecter leaves, the engine arrives: one iteration
                    p.setPollIn(p.addHandle(channel.source(), newHandler));
                    writeOneByte(channel);
                    lossTick.set(tick);
                } else if (lossTick.get() > 0 && tick >= lossTick.get() + TICKS_TO_SERVE) {
                    verdict.compareAndSet(null, "old handle served: " + oldServed.get() + ", new handle served: "
                            + (servedAtTick.get() >= 0));
                }
            }), "test-poller-repair-loss"));
            return loop.get();
        });
        Poller poller = new Poller(ctx, "iothread-loss");
        poller.start();
        try {
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (verdict.get() == null) {
                assertTrue(System.nanoTime() < deadline, "the loss and " + TICKS_TO_SERVE + " ticks within 10 s: " + ticks);
                Thread.sleep(5);
            }
        } finally {
            poller.stop();
            loop.get().join(10_000);
            ctx.terminate();
            channel.sink().close();
            channel.source().close();
        }
        assertEquals("old handle served: false, new handle served: true", verdict.get(), "the handle added at tick "
                + lossTick + " while the old key was still on its channel is registered by a later tick's pass");
        assertTrue(servedAtTick.get() > lossTick.get(), "the registration was lost at tick " + lossTick
                + " (its byte was waiting, yet not served in that iteration): served after tick " + servedAtTick);
    }

    /** A handler that drains {@code channel} after running {@code onRead}. */
    private static IPollEvents reader(Pipe channel, Runnable onRead) {
        return new IPollEvents() {
            @Override
            public void inEvent() {
                onRead.run();
                try {
                    channel.source().read(ByteBuffer.allocate(16));
                } catch (IOException e) {
                    throw new IllegalStateException(e);
                }
            }
        };
    }

    private static void writeOneByte(Pipe channel) {
        try {
            channel.sink().write(ByteBuffer.wrap(new byte[] {1}));
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }
}
