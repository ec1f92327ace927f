package lmcache4j.server.net;

import java.io.IOException;
import java.net.BindException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;

import org.zeromq.ZMQException;

/**
 * A server could not bind one of its sockets because another process holds the address. It names
 * the address and which of the server's sockets it was, so that a command can name the option that
 * moves it ({@code --port}, {@code --http-port}, ...) instead of JeroMQ's "Errno 48".
 */
public final class AddressInUseException extends BindException {
    private static final long serialVersionUID = 1L;

    private final String socket;
    private final String address;

    /**
     * @param socket  which of the server's sockets: a short name its command maps to an option
     *                ({@code "zmq"}, {@code "http"}, {@code "pull"}, ...)
     * @param address the address asked for, {@code host:port}
     */
    public AddressInUseException(String socket, String address) {
        super("address " + address + " already in use");
        this.socket = socket;
        this.address = address;
    }

    /** Which of the server's sockets could not be bound. */
    public String socket() {
        return socket;
    }

    /** The address asked for, {@code host:port}. */
    public String address() {
        return address;
    }

    /**
     * The failure of binding the server socket {@code socket} ({@code what}, in words) to
     * {@code host:port}, as an exception whose message says why: an {@link AddressInUseException}
     * when another process holds the address, else an {@link IOException} with the system's reason.
     * JeroMQ reports every failed bind as "Errno 48" (address in use), even for an address this
     * machine does not have, so a ZeroMQ failure is checked by binding a plain socket to the same
     * address, whose error carries the system's reason.
     */
    public static IOException of(Throwable failure, String socket, String what, String host, int port) {
        String address = host + ":" + port;
        // The system's reason: JeroMQ's own failure says only "Errno 48", so it is no cause worth printing.
        Throwable reason = failure instanceof ZMQException ? probe(host, port) : failure;
        if (reason == null) {
            reason = failure;
        }
        if (reason.getMessage() != null && reason.getMessage().contains("in use")) {
            AddressInUseException e = new AddressInUseException(socket, address);
            e.initCause(failure);
            return e;
        }
        return new IOException("cannot bind " + what + " on " + address + ": " + reason.getMessage(), reason);
    }

    /** Why binding {@code host:port} fails, as the system says it; null when it does not fail (the holder left). */
    private static IOException probe(String host, int port) {
        try (ServerSocket s = new ServerSocket()) {
            s.bind(host.equals("*") ? new InetSocketAddress(port) : new InetSocketAddress(host, port));
            return null;
        } catch (IOException e) {
            return e;
        }
    }
}
