package lmcache4j.server.controller;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.Objects;

/**
 * A {@code HOST:PORT} address as LMCache writes its controller URLs ({@code controller_pull_url},
 * {@code heartbeat_url}, a worker's {@code ip:port}): IPv6 hosts in brackets, port 0 for "any free
 * port" when binding, {@code *} or {@code 0.0.0.0} for every interface.
 */
public record Endpoint(String host, int port) {
    public Endpoint {
        Objects.requireNonNull(host, "host");
        if (host.isEmpty()) {
            throw new IllegalArgumentException("empty host in an endpoint");
        }
        if (port < 0 || port > 65535) {
            throw new IllegalArgumentException("port must be 0..65535, was " + port);
        }
    }

    /** Parses {@code HOST:PORT}, {@code [v6]:PORT} or {@code tcp://HOST:PORT}. */
    public static Endpoint parse(String text) {
        String t = text.startsWith("tcp://") ? text.substring("tcp://".length()) : text;
        int colon = t.lastIndexOf(':');
        if (colon <= 0 || colon == t.length() - 1) {
            throw new IllegalArgumentException("'" + text + "' is not HOST:PORT");
        }
        String host = t.substring(0, colon);
        if (host.startsWith("[") && host.endsWith("]")) {
            host = host.substring(1, host.length() - 1);
        }
        String portText = t.substring(colon + 1);
        int port;
        try {
            port = "*".equals(portText) ? 0 : Integer.parseInt(portText);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("'" + text + "' has no numeric port");
        }
        return new Endpoint(host, port);
    }

    /** Whether the host means every interface. */
    public boolean wildcard() {
        return host.equals("*") || host.equals("0.0.0.0") || host.equals("::");
    }

    /** The ZeroMQ address to bind: {@code tcp://host:port}, port 0 written {@code *} (any free port). */
    public String bindAddress() {
        return "tcp://" + (wildcard() ? "*" : bracketed(host)) + ":" + (port == 0 ? "*" : Integer.toString(port));
    }

    /** The ZeroMQ address to connect to. */
    public String connectAddress() {
        return "tcp://" + bracketed(host) + ":" + port;
    }

    /**
     * The address a peer can connect to: a wildcard host becomes this machine's address (the
     * controller tells workers where its heartbeat socket is).
     */
    public Endpoint connectable() {
        if (!wildcard()) {
            return this;
        }
        try {
            return new Endpoint(InetAddress.getLocalHost().getHostAddress(), port);
        } catch (UnknownHostException e) {
            return new Endpoint(InetAddress.getLoopbackAddress().getHostAddress(), port);
        }
    }

    /** The same host with the port a bind actually got ({@code tcp://host:port} from ZeroMQ's last endpoint). */
    public Endpoint withPortOf(String lastEndpoint) {
        return new Endpoint(host, parse(lastEndpoint).port());
    }

    @Override
    public String toString() {
        return bracketed(host) + ":" + port;
    }

    private static String bracketed(String host) {
        return host.indexOf(':') >= 0 ? "[" + host + "]" : host;
    }
}
