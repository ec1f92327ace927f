package lmcache4j.bench.zmq;

import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

import lmcache4j.engine.zmq.OwnedZContext;

/** JeroMQ 0.6.0 as lmcache4j runs it ({@link OwnedZContext}: its pollers repaired), or as it ships. */
final class JeromqLibrary implements BenchLibrary {
    private final ZContext context;
    private final String name;

    private JeromqLibrary(ZContext context, String name) {
        this.context = context;
        this.name = name;
    }

    /** JeroMQ in an {@link OwnedZContext}, as every lmcache4j socket is. */
    static JeromqLibrary repaired() {
        return new JeromqLibrary(new OwnedZContext("bench-zmq", 1), "jeromq");
    }

    /** JeroMQ in a plain context, without lmcache4j's repair of its lost registrations. */
    static JeromqLibrary asShipped() {
        return new JeromqLibrary(JeromqAsShipped.context(), "jeromq-as-shipped");
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public String describe() {
        String version = ZMQ.class.getModule().getDescriptor() == null ? "" // on the class path: no module version
                : ZMQ.class.getModule().getDescriptor().rawVersion().map(v -> " " + v).orElse("");
        return "JeroMQ" + version + (name.equals("jeromq") ? " (lmcache4j's contexts)" : " (as shipped)");
    }

    @Override
    public BenchSocket socket(Kind kind) {
        return new Socket(context, context.createSocket(SocketType.type(kind.type)));
    }

    @Override
    public void close() {
        context.close();
    }

    private record Socket(ZContext context, ZMQ.Socket s) implements BenchSocket {
        @Override
        public void linger(int millis) {
            s.setLinger(millis);
        }

        @Override
        public void receiveTimeout(int millis) {
            s.setReceiveTimeOut(millis);
        }

        @Override
        public void sendHighWaterMark(int messages) {
            s.setSndHWM(messages);
        }

        @Override
        public void receiveHighWaterMark(int messages) {
            s.setRcvHWM(messages);
        }

        @Override
        public void handshakeTimeout(int millis) {
            s.setHandshakeIvl(millis);
        }

        @Override
        public void subscribeAll() {
            s.subscribe(new byte[0]);
        }

        @Override
        public void curveServer(byte[] secretKey) {
            s.setCurveServer(true);
            s.setCurveSecretKey(secretKey);
        }

        @Override
        public void curveClient(byte[] serverKey, byte[] publicKey, byte[] secretKey) {
            s.setCurveServerKey(serverKey);
            s.setCurvePublicKey(publicKey);
            s.setCurveSecretKey(secretKey);
        }

        @Override
        public int bindLoopback() {
            return s.bindToRandomPort("tcp://127.0.0.1");
        }

        @Override
        public void connect(String endpoint) {
            s.connect(endpoint);
        }

        @Override
        public boolean send(byte[] frame, boolean more) {
            return s.send(frame, more ? ZMQ.SNDMORE : 0);
        }

        @Override
        public byte[] recv() {
            return s.recv(0);
        }

        @Override
        public boolean more() {
            return s.hasReceiveMore();
        }

        @Override
        public void close() {
            context.destroySocket(s);
        }
    }
}
