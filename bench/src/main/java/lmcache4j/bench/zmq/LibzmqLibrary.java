package lmcache4j.bench.zmq;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

/** libzmq through {@link LibZmq}: a context of one I/O thread, each socket with native buffers of its own. */
final class LibzmqLibrary implements BenchLibrary {
    /** The largest frame the benchmark receives through libzmq (a larger one is an error). */
    private static final int MAX_FRAME = 1 << 20;

    private final LibZmq z;
    private final MemorySegment context;
    private final List<Socket> open = new ArrayList<>();

    LibzmqLibrary(LibZmq z) {
        this.z = z;
        this.context = z.newContext(1);
    }

    @Override
    public String name() {
        return "libzmq";
    }

    @Override
    public String describe() {
        return "libzmq " + z.version();
    }

    @Override
    public synchronized BenchSocket socket(Kind kind) {
        Socket s = new Socket(z, z.socket(context, kind.type), this);
        open.add(s);
        return s;
    }

    private synchronized void closed(Socket s) {
        open.remove(s);
    }

    @Override
    public void close() {
        List<Socket> left;
        synchronized (this) {
            left = new ArrayList<>(open);
        }
        for (Socket s : left) {
            s.linger(0);
            s.close();
        }
        z.term(context);
    }

    private static final class Socket implements BenchSocket {
        private final LibZmq z;
        private final MemorySegment s;
        private final LibzmqLibrary owner;
        private final Arena arena = Arena.ofShared();
        private final MemorySegment in = arena.allocate(MAX_FRAME);
        private MemorySegment out = arena.allocate(4096);
        private final MemorySegment state = LibZmq.callState(arena);
        private final MemorySegment scratch = arena.allocate(16, 8);
        private boolean closed;

        Socket(LibZmq z, MemorySegment s, LibzmqLibrary owner) {
            this.z = z;
            this.s = s;
            this.owner = owner;
        }

        @Override
        public void linger(int millis) {
            z.setInt(s, LibZmq.LINGER, millis);
        }

        @Override
        public void receiveTimeout(int millis) {
            z.setInt(s, LibZmq.RCVTIMEO, millis);
        }

        @Override
        public void sendHighWaterMark(int messages) {
            z.setInt(s, LibZmq.SNDHWM, messages);
        }

        @Override
        public void receiveHighWaterMark(int messages) {
            z.setInt(s, LibZmq.RCVHWM, messages);
        }

        @Override
        public void handshakeTimeout(int millis) {
            z.setInt(s, LibZmq.HANDSHAKE_IVL, millis);
        }

        @Override
        public void subscribeAll() {
            z.setBytes(s, LibZmq.SUBSCRIBE, new byte[0]);
        }

        @Override
        public void curveServer(byte[] secretKey) {
            z.setInt(s, LibZmq.CURVE_SERVER, 1);
            z.setBytes(s, LibZmq.CURVE_SECRETKEY, secretKey);
        }

        @Override
        public void curveClient(byte[] serverKey, byte[] publicKey, byte[] secretKey) {
            z.setBytes(s, LibZmq.CURVE_SERVERKEY, serverKey);
            z.setBytes(s, LibZmq.CURVE_PUBLICKEY, publicKey);
            z.setBytes(s, LibZmq.CURVE_SECRETKEY, secretKey);
        }

        @Override
        public int bindLoopback() {
            z.bind(s, "tcp://127.0.0.1:*");
            String endpoint = z.lastEndpoint(s);
            return Integer.parseInt(endpoint.substring(endpoint.lastIndexOf(':') + 1));
        }

        @Override
        public void connect(String endpoint) {
            z.connect(s, endpoint);
        }

        @Override
        public boolean send(byte[] frame, boolean more) {
            if (frame.length > out.byteSize()) {
                out = arena.allocate(Math.max(frame.length, 2 * out.byteSize()));
            }
            MemorySegment.copy(frame, 0, out, JAVA_BYTE, 0, frame.length);
            return z.send(state, s, out, frame.length, more ? LibZmq.SNDMORE : 0) >= 0;
        }

        @Override
        public byte[] recv() {
            int n = z.recv(state, s, in, 0);
            if (n < 0) {
                int errno = LibZmq.errno(state);
                if (errno == LibZmq.EAGAIN) {
                    return null;
                }
                throw new IllegalStateException("zmq_recv failed: errno " + errno);
            }
            if (n > MAX_FRAME) {
                throw new IllegalStateException("a frame of " + n + " bytes, more than the benchmark's " + MAX_FRAME);
            }
            byte[] frame = new byte[n];
            MemorySegment.copy(in, JAVA_BYTE, 0, frame, 0, n);
            return frame;
        }

        @Override
        public boolean more() {
            return z.rcvMore(s, scratch);
        }

        @Override
        public void close() {
            if (closed) {
                return;
            }
            closed = true;
            z.close(s);
            arena.close();
            owner.closed(this);
        }
    }
}
