package lmcache4j.engine.zmq;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * A peer that speaks just enough ZMTP 3.0 to make a JeroMQ socket hold memory for it: the 64-byte
 * greeting naming a security mechanism, then (optionally) a command frame's header declaring a
 * large body that never comes. Public so that other modules' attack tests use the same bytes.
 */
public final class Stranger implements AutoCloseable {
    /** The largest declared size JeroMQ's receive budget does not count. */
    public static final int UNCOUNTED_DECLARED = 65_535;

    private final Socket socket;
    private boolean refused;

    private Stranger(Socket socket) {
        this.socket = socket;
    }

    /** Connects to {@code host:port} and sends nothing. */
    public static Stranger connect(String host, int port) throws IOException {
        Socket s = new Socket();
        s.connect(new InetSocketAddress(host, port), 5_000);
        s.setSoTimeout(100);
        return new Stranger(s);
    }

    /** Connects, greets as a ZMTP 3.0 client of {@code mechanism} (NULL, CURVE) and declares a command of {@code declared} bytes. */
    public static Stranger greetAndDeclare(String host, int port, String mechanism, int declared) throws IOException {
        Stranger s = connect(host, port);
        s.send(greeting(mechanism));
        if (declared > 0) {
            s.send(ByteBuffer.allocate(9).put((byte) 0x06).putLong(declared).array()); // COMMAND | LARGE, 8-byte size
        }
        return s;
    }

    /** ZMTP 3.0's greeting: signature, version 3.0, the mechanism's name padded to 20 bytes, as-server 0, filler. */
    static byte[] greeting(String mechanism) {
        ByteBuffer g = ByteBuffer.allocate(64);
        g.put((byte) 0xff).put(new byte[8]).put((byte) 0x7f).put((byte) 3).put((byte) 0);
        byte[] name = mechanism.getBytes(StandardCharsets.US_ASCII);
        g.put(name).put(new byte[20 - name.length]).put((byte) 0).put(new byte[31]);
        return g.array();
    }

    /** The server's port this stranger connected to. */
    public int serverPort() {
        return socket.getPort();
    }

    /** The port of this end of the connection: what the server sees as the peer's port. */
    public int localPort() {
        return socket.getLocalPort();
    }

    /** Sends {@code bytes} unless the server already ended the connection (a refused stranger's writes fail). */
    private void send(byte[] bytes) {
        try {
            OutputStream out = socket.getOutputStream();
            out.write(bytes);
            out.flush();
        } catch (IOException e) {
            refused = true;
        }
    }

    /** True when the server ended the connection: its input is at its end (or was reset). */
    public boolean closedByServer() throws IOException {
        if (refused) {
            return true;
        }
        InputStream in = socket.getInputStream();
        byte[] sink = new byte[512];
        try {
            while (true) {
                int n = in.read(sink);
                if (n < 0) {
                    return true;
                }
            }
        } catch (SocketTimeoutException e) {
            return false;
        } catch (IOException e) {
            return true; // reset
        }
    }

    @Override
    public void close() throws IOException {
        socket.close();
    }
}
