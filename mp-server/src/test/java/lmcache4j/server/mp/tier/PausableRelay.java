package lmcache4j.server.mp.tier;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A TCP relay in front of a real remote store that can hold back its answers: once {@linkplain #holdLargeAnswers
 * armed}, it forwards answers until more than {@link #SMALL} bytes have gone by (an existence check's answer
 * passes), then holds the rest (an object's bytes) until {@link #release}. Requests always pass.
 */
final class PausableRelay implements AutoCloseable {
    /** Bytes an armed relay still forwards: more than a small answer, less than one object. */
    static final int SMALL = 1024;

    private final ServerSocket server;
    private final int targetPort;
    private final List<Socket> sockets = new CopyOnWriteArrayList<>();
    private final Object gate = new Object();
    private final AtomicLong held = new AtomicLong();
    private boolean armed;
    private long forwardedSinceArmed;

    PausableRelay(int targetPort) throws IOException {
        this.targetPort = targetPort;
        server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        Thread.ofVirtual().start(this::acceptLoop);
    }

    String url() {
        return "lm://127.0.0.1:" + server.getLocalPort() + "?timeout_ms=600000";
    }

    void holdLargeAnswers() {
        synchronized (gate) {
            armed = true;
            forwardedSinceArmed = 0;
        }
    }

    /** Bytes of answers held back now. */
    long held() {
        return held.get();
    }

    void release() {
        synchronized (gate) {
            armed = false;
            gate.notifyAll();
        }
    }

    private void acceptLoop() {
        try {
            while (!server.isClosed()) {
                Socket client = server.accept();
                Socket target = new Socket(InetAddress.getLoopbackAddress(), targetPort);
                sockets.add(client);
                sockets.add(target);
                Thread.ofVirtual().start(() -> pump(client, target, false));
                Thread.ofVirtual().start(() -> pump(target, client, true));
            }
        } catch (IOException closed) {
            // close() ended it
        }
    }

    private void pump(Socket from, Socket to, boolean answers) {
        byte[] buffer = new byte[16 << 10];
        try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
            for (int n; (n = in.read(buffer)) >= 0; ) {
                if (answers) {
                    awaitGate(n);
                }
                out.write(buffer, 0, n);
                out.flush();
            }
        } catch (IOException | InterruptedException e) {
            // a side closed
        }
    }

    private void awaitGate(int n) throws InterruptedException {
        synchronized (gate) {
            if (armed && forwardedSinceArmed + n > SMALL) {
                held.addAndGet(n);
                while (armed) {
                    gate.wait();
                }
                held.addAndGet(-n);
            } else if (armed) {
                forwardedSinceArmed += n;
            }
        }
    }

    @Override
    public void close() throws IOException {
        release();
        server.close();
        for (Socket s : sockets) {
            s.close();
        }
    }
}
