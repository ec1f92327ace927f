package lmcache4j.engine.pd;

import java.io.IOException;
import java.util.Objects;

import lmcache4j.engine.LMCacheEngine;
import lmcache4j.engine.pd.wire.PdReceiveServer;

/**
 * A decoder's side of disaggregated prefill ({@code enable_pd} with {@code pd_role: receiver}):
 * the two ports senders push a request's KV to, feeding the engine's PD tier ({@link PdBackend}).
 * The engine's retrieve then finds each pushed chunk there.
 *
 * <pre>{@code
 * try (LMCacheEngine decoder = LMCacheEngine.create(config, model, connector, List.of());
 *      PdReceiver receiver = PdReceiver.start(decoder)) {
 *     PdPeer where = receiver.peer(); // what the proxy hands the prefiller with each request
 *     ...
 * }
 * }</pre>
 *
 * <p>It listens on {@code pd_peer_host}, the engine's worker's entries of {@code pd_peer_alloc_port}
 * and {@code pd_peer_init_port} (0: any free port), and demands the deployment's token
 * ({@code extra_config.p2p_token} or {@code deployment_secret_file}) of every connection: a sender
 * that cannot prove it, or a chunk whose tag fails, is refused and counted, and nothing of it is
 * served. Thread-safe; close it before the engine.
 */
public final class PdReceiver implements AutoCloseable {
    /**
     * Counters since start, a snapshot.
     *
     * @param connections        connections accepted
     * @param refusedConnections connections closed at once, past the limit of open ones
     * @param authFailures       connections that could not prove the deployment's token
     * @param protocolErrors     connections closed for speaking out of protocol
     * @param allocationRequests allocation requests answered
     * @param writes             chunk writes landed
     * @param tagFailures        chunk writes whose tag failed (altered in flight, or forged)
     */
    public record Stats(long connections, long refusedConnections, long authFailures, long protocolErrors,
                        long allocationRequests, long writes, long tagFailures) {
    }

    private final PdReceiveServer server;

    private PdReceiver(PdReceiveServer server) {
        this.server = server;
    }

    /**
     * Starts serving {@code engine}'s PD tier.
     *
     * @throws IllegalArgumentException when the engine's config is not a PD receiver's
     * @throws IOException              when a port cannot be bound (the message names both settings)
     */
    public static PdReceiver start(LMCacheEngine engine) throws IOException {
        return new PdReceiver(PdReceiveServer.start(Objects.requireNonNull(engine, "engine")));
    }

    /** Where senders reach this receiver: its host and the ports it bound. */
    public PdPeer peer() {
        return new PdPeer(server.host(), server.initPort(), server.allocPort());
    }

    /** The engine's PD tier this receiver feeds (its own counters: chunks allocated, landed, refused, expired). */
    public PdBackend tier() {
        return server.tier();
    }

    /** The counters now. */
    public Stats stats() {
        PdReceiveServer.Stats s = server.stats();
        return new Stats(s.connections(), s.refusedConnections(), s.authFailures(), s.protocolErrors(),
                s.allocationRequests(), s.writes(), s.tagFailures());
    }

    /** Stops accepting, closes every connection (a write in progress is discarded) and waits for their threads. */
    @Override
    public void close() {
        server.close();
    }

    @Override
    public String toString() {
        return "PdReceiver[" + peer() + "]";
    }
}
