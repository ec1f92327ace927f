package lmcache4j.engine.p2p;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;

import lmcache4j.engine.key.CacheKey;
import lmcache4j.engine.remote.lm.LmConnector;

/**
 * A {@link PeerLocator} for a fixed set of peers and no controller: it asks each peer's transfer
 * server, key by key ({@code EXIST}, all keys at once over a few connections), how long a leading run
 * it holds. One round trip per key and peer, so it suits a few peers (tests, the transfer benchmark,
 * a static pair of instances); the controller answers the same question for a cluster in one message.
 */
public final class ProbingPeerLocator implements PeerLocator, AutoCloseable {
    private static final int PROBE_CONNECTIONS = 4;
    private final Map<String, String> peers;
    private final Map<String, LmConnector> connectors;

    /**
     * @param peers   instance id → its transfer server's {@code host:port}
     * @param token   the transfer servers' secret, or empty
     * @param timeout the deadline of one probe
     */
    public ProbingPeerLocator(Map<String, String> peers, Optional<String> token, Duration timeout) {
        this.peers = Map.copyOf(peers);
        Objects.requireNonNull(token, "token");
        var c = new HashMap<String, LmConnector>();
        this.peers.forEach((id, url) -> c.put(id, new LmConnector(PeerHolding.parseAddress(url), token, timeout,
                PROBE_CONNECTIONS)));
        this.connectors = Map.copyOf(c);
    }

    @Override
    public CompletableFuture<List<PeerHolding>> locate(List<? extends CacheKey> keys) {
        List<CompletableFuture<PeerHolding>> probes = new ArrayList<>(peers.size());
        peers.forEach((id, url) -> probes.add(leadingRun(connectors.get(id), keys, 0)
                .thenApply(n -> new PeerHolding(id, "LocalCPUBackend", n, url))
                .exceptionally(failure -> new PeerHolding(id, "LocalCPUBackend", 0, url)))); // unreachable: holds nothing
        return CompletableFuture.allOf(probes.toArray(CompletableFuture[]::new))
                .thenApply(done -> probes.stream().map(CompletableFuture::join).filter(h -> h.leadingChunks() > 0).toList());
    }

    /** How many of {@code keys}, from the first, the peer holds: every key asked at once, counted up to the first miss. */
    private static CompletableFuture<Integer> leadingRun(LmConnector peer, List<? extends CacheKey> keys, int from) {
        List<CompletableFuture<Boolean>> asked = keys.subList(from, keys.size()).stream().map(peer::exists).toList();
        return CompletableFuture.allOf(asked.toArray(CompletableFuture[]::new)).thenApply(done -> {
            int n = 0;
            while (n < asked.size() && asked.get(n).join()) {
                n++;
            }
            return from + n;
        });
    }

    @Override
    public void close() {
        connectors.values().forEach(LmConnector::close);
    }
}
