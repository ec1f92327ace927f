package lmcache4j.bench.zmq;

/**
 * One socket of either library, with what the measurements need and nothing else. Not
 * thread-safe (ZeroMQ sockets are not): one thread uses it at a time.
 */
interface BenchSocket extends AutoCloseable {
    void linger(int millis);

    void receiveTimeout(int millis);

    void sendHighWaterMark(int messages);

    void receiveHighWaterMark(int messages);

    /** The handshake timer: a connection not through its ZMTP handshake by then is dropped and remade. */
    void handshakeTimeout(int millis);

    void subscribeAll();

    /** Serves CURVE with this 32-byte secret key. */
    void curveServer(byte[] secretKey);

    /** Connects as a CURVE client of {@code serverKey} with this key pair (32 bytes each). */
    void curveClient(byte[] serverKey, byte[] publicKey, byte[] secretKey);

    /** Binds {@code tcp://127.0.0.1} on a port the kernel picks; returns the port. */
    int bindLoopback();

    void connect(String endpoint);

    /** Sends one frame, more to follow or not; false when it could not be queued. */
    boolean send(byte[] frame, boolean more);

    /** The next frame, or null when none came within the receive timeout. */
    byte[] recv();

    /** Whether the last frame received has more frames after it. */
    boolean more();

    @Override
    void close();
}
