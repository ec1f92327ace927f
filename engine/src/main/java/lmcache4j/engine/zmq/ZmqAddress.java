package lmcache4j.engine.zmq;

/** LMCache's controller and lookup URLs as ZeroMQ TCP addresses. */
public final class ZmqAddress {
    private ZmqAddress() {
    }

    /**
     * {@code host:port} or {@code tcp://host:port} as a ZeroMQ TCP address (LMCache writes the bare
     * form and prefixes {@code tcp://}); {@code *} and {@code 0.0.0.0}, bind addresses, are read as
     * this host's loopback.
     */
    public static String of(String url, String setting) {
        String hostPort = url.startsWith("tcp://") ? url.substring("tcp://".length()) : url;
        int colon = hostPort.lastIndexOf(':');
        if (colon <= 0 || colon == hostPort.length() - 1 || hostPort.contains("://")) {
            throw new IllegalArgumentException(setting + " '" + url + "' is not host:port (or tcp://host:port)");
        }
        String host = hostPort.substring(0, colon);
        try {
            int port = Integer.parseInt(hostPort.substring(colon + 1));
            if (port <= 0 || port > 65535) {
                throw new NumberFormatException();
            }
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(setting + " '" + url + "' has no valid port (1-65535)");
        }
        if (host.equals("*") || host.equals("0.0.0.0")) {
            host = "127.0.0.1";
        }
        return "tcp://" + host + hostPort.substring(colon);
    }
}
