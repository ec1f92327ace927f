package lmcache4j.engine.pd;

import java.util.Objects;

/**
 * Where a sender pushes a request's KV: one worker of a receiver (decoder), its host, its transfer
 * port ({@code pd_peer_init_port}) and its allocation port ({@code pd_peer_alloc_port}). LMCache's
 * proxy hands these to the prefiller with each request ({@code disagg_spec}); so does
 * {@code ./lmcache4j pd-proxy}.
 *
 * @param host      the receiver's {@code pd_peer_host}
 * @param initPort  the worker's transfer port
 * @param allocPort the worker's allocation port
 */
public record PdPeer(String host, int initPort, int allocPort) {
    public PdPeer {
        Objects.requireNonNull(host, "host");
        if (host.isBlank()) {
            throw new IllegalArgumentException("a PD receiver needs a host");
        }
        if (initPort < 1 || initPort > 65535 || allocPort < 1 || allocPort > 65535) {
            throw new IllegalArgumentException("a PD receiver's ports are 1..65535, got init " + initPort + " and alloc "
                    + allocPort);
        }
    }

    @Override
    public String toString() {
        return host + ":" + initPort + "/" + allocPort;
    }
}
