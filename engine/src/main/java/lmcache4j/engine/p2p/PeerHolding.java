package lmcache4j.engine.p2p;

import java.net.InetSocketAddress;
import java.util.Objects;

/**
 * One peer that holds a run of the chunks asked about: a row of LMCache's
 * {@code BatchedP2PLookupRetMsg.layout_info}.
 *
 * @param instanceId    the peer instance ({@code lmcache_instance_id})
 * @param location      the tier it holds them in (LMCache's backend name)
 * @param leadingChunks how many chunks, from the first asked, it holds
 * @param peerInitUrl   its transfer server, {@code host:port} (LMCache's {@code peer_init_url})
 */
public record PeerHolding(String instanceId, String location, int leadingChunks, String peerInitUrl) {
    public PeerHolding {
        Objects.requireNonNull(instanceId, "instanceId");
        Objects.requireNonNull(location, "location");
        Objects.requireNonNull(peerInitUrl, "peerInitUrl");
        if (leadingChunks < 0) {
            throw new IllegalArgumentException("leadingChunks must be >= 0, was " + leadingChunks);
        }
    }

    /** The transfer server's address, parsed from {@code host:port} (an {@code lm://} prefix is accepted). */
    public InetSocketAddress address() {
        return parseAddress(peerInitUrl);
    }

    /**
     * {@code host:port}, {@code [v6]:port} or {@code lm://host:port} as an address.
     *
     * @throws IllegalArgumentException naming the URL when it has no host or no valid port
     */
    public static InetSocketAddress parseAddress(String peerInitUrl) {
        String s = peerInitUrl.startsWith("lm://") ? peerInitUrl.substring("lm://".length()) : peerInitUrl;
        int colon = s.lastIndexOf(':');
        if (colon <= 0 || colon == s.length() - 1) {
            throw new IllegalArgumentException("peer_init_url '" + peerInitUrl + "' is not host:port");
        }
        String host = s.substring(0, colon);
        if (host.startsWith("[") && host.endsWith("]")) {
            host = host.substring(1, host.length() - 1);
        }
        int port;
        try {
            port = Integer.parseInt(s.substring(colon + 1));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("peer_init_url '" + peerInitUrl + "' has no numeric port");
        }
        if (port < 1 || port > 65535) {
            throw new IllegalArgumentException("peer_init_url '" + peerInitUrl + "' has port " + port + " outside 1..65535");
        }
        return new InetSocketAddress(host, port);
    }
}
