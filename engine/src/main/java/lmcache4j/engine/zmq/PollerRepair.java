package lmcache4j.engine.zmq;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.Pipe;
import java.util.function.Consumer;

import zmq.poll.IPollEvents;
import zmq.poll.Poller;

/**
 * Gives a connection JeroMQ 0.6.0 forgot to watch its poller back, within one tick.
 *
 * <p>The cause (JeroMQ's {@code zmq.poll.Poller.run}, tag v0.6.0; open upstream as zeromq/jeromq
 * pull request 1022): when a connect completes, the connecter removes its handle (its selection
 * key is cancelled) and the new stream engine adds a handle for the same channel. A cancelled key
 * leaves the channel only at the selector's next select, and the poller applies both changes in
 * one pass over its handles. If the engine was attached in the same loop iteration as the connect
 * (the I/O thread's mailbox was already readable, for example because the application was
 * sending), that pass finds the old key still on the channel, neither null (register) nor valid
 * (update), and skips the engine's handle. Nothing registers it later until some other handle of
 * that I/O thread changes: the engine never sends its greeting, the peer waits, and the
 * connection sits until the handshake timer (30 s by default) drops and remakes it. Measured on a
 * loaded 2-vCPU VM: 8 of 300 connects followed by a burst of sends stalled.
 *
 * <p>Installed on every I/O thread's poller of an {@link OwnedZContext} (its thread factory wraps
 * the poller's body), this asks the poller for another pass over its handles every tick: a pass
 * after the select that removed the cancelled key registers the forgotten handle. The tick is a
 * JeroMQ timer, and a byte through a pipe the poller watches follows each tick: JeroMQ computes
 * its next wait from the timers it had before the due ones ran, so a timer re-added while a later
 * one (a connection's 30 s handshake timer) is pending would otherwise not end the next wait, and
 * the stuck connection would wait for that later timer after all.
 *
 * <p>A lost registration follows a change of the poller's handles (a connect starts or completes),
 * so the tick is 20 ms for a second after the number of handles changed
 * and 500 ms otherwise ({@link TickSchedule}) (a connect slower than that second completes
 * without changing the number: it is repaired within an idle tick). Both grow with the number of
 * handles, 10 µs a handle, so that the passes stay near 1% of the I/O thread however many
 * connections it serves. {@code PollerRepairTest} loops connects that stall without it, and loses a
 * registration on purpose (a handle cancelled and another added for its channel on one tick) to
 * check that the next tick's pass registers it.
 */
final class PollerRepair implements IPollEvents, AutoCloseable {
    private static final System.Logger LOG = System.getLogger(PollerRepair.class.getName());
    private static final int TIMER_ID = 0x1c4e;
    /** JeroMQ's name for an I/O thread's poller (the reaper's poller serves no connections). */
    private static final String IO_THREAD_PREFIX = "iothread-";

    private final Poller poller;
    private final Consumer<Poller> onTick;
    private final Pipe wake;
    private final Poller.Handle wakeHandle;
    private final ByteBuffer one = ByteBuffer.allocate(1);
    private final ByteBuffer drain = ByteBuffer.allocate(64);
    private final TickSchedule ticks = new TickSchedule(System::nanoTime);

    private PollerRepair(Poller poller, Consumer<Poller> onTick) {
        this.poller = poller;
        this.onTick = onTick;
        try {
            wake = Pipe.open();
            wake.source().configureBlocking(false);
            wake.sink().configureBlocking(false);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot open the pipe that wakes a ZeroMQ I/O thread", e);
        }
        wakeHandle = poller.addHandle(wake.source(), this);
        poller.setPollIn(wakeHandle);
    }

    /**
     * {@code body} as the thread named {@code name} should run it: a JeroMQ I/O thread's poller loop
     * with the repair added first (on the poller's own thread, as JeroMQ requires) and closed when the
     * loop ends, {@code onTick} run on each tick; anything else unchanged.
     */
    static Runnable around(Runnable body, String name, Consumer<Poller> onTick) {
        return around(body, name, onTick, repair -> { });
    }

    /** As {@link #around(Runnable, String, Consumer)}, handing {@code installed} the repair as it is added (tests). */
    static Runnable around(Runnable body, String name, Consumer<Poller> onTick, Consumer<PollerRepair> installed) {
        if (!(body instanceof Poller poller) || !name.startsWith(IO_THREAD_PREFIX)) {
            return body;
        }
        return () -> {
            try (PollerRepair repair = new PollerRepair(poller, onTick)) {
                installed.accept(repair);
                repair.schedule();
                body.run();
            }
        };
    }

    /** Whether either end of the pipe that wakes the poller is still open (it must not outlive the poller). */
    boolean holdsPipe() {
        return wake.sink().isOpen() || wake.source().isOpen();
    }

    @Override
    public void timerEvent(int id) {
        poller.setPollIn(wakeHandle); // marks the poller's handles for a pass, which runs right after the timers
        schedule();
        try {
            onTick.accept(poller);
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.ERROR, "a task on a ZeroMQ I/O thread's tick failed: " + e, e);
        }
        try {
            one.clear();
            wake.sink().write(one); // ends the coming wait at once: the next one is computed with this timer in it
        } catch (IOException e) {
            throw new UncheckedIOException("cannot wake a ZeroMQ I/O thread", e);
        }
    }

    @Override
    public void inEvent() {
        try {
            while (wake.source().read(drain.clear()) > 0) {
                // the bytes only woke the poller
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the pipe that wakes a ZeroMQ I/O thread", e);
        }
    }

    private void schedule() {
        poller.addTimer(ticks.nextTickMillis(poller.getLoad()), this, TIMER_ID);
    }

    /** Closes the pipe (the poller's loop has ended: nothing watches it any more). */
    @Override
    public void close() {
        try {
            wake.sink().close();
            wake.source().close();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot close the pipe that wakes a ZeroMQ I/O thread", e);
        }
    }
}
