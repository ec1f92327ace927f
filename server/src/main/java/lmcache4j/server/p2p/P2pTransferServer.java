package lmcache4j.server.p2p;

import java.io.IOException;
import java.net.InetAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

import lmcache4j.engine.LMCacheEngine;
import lmcache4j.engine.config.P2pSettings;
import lmcache4j.engine.security.DeploymentSecret;
import lmcache4j.engine.storage.StorageBackend;
import lmcache4j.engine.storage.cpu.LocalCpuBackend;
import lmcache4j.engine.storage.disk.LocalDiskBackend;
import lmcache4j.server.lm.LmCacheServer;
import lmcache4j.server.lm.LmServerLimits;

/**
 * An engine's P2P transfer server: the hardened {@code lm://} server ({@link LmCacheServer}: its
 * frames, connection and time limits, the shared-secret token and its throttle) over the engine's
 * CPU tier and disk tier ({@link EngineTierStore}), read-only. Peers fetch with an
 * {@code LmConnector}; what they read goes from the engine's off-heap memory to the socket.
 */
public final class P2pTransferServer implements AutoCloseable {
    /** The largest PUT frame a peer may send before its connection is closed: peers never write. */
    static final int MAX_FRAME_BYTES = 64 * 1024;

    private final LmCacheServer server;
    private final EngineTierStore store;
    private final String advertisedHost;

    private P2pTransferServer(LmCacheServer server, EngineTierStore store, String advertisedHost) {
        this.server = server;
        this.store = store;
        this.advertisedHost = advertisedHost;
    }

    /**
     * Serves {@code engine}'s tiers on {@code p2p_host} and worker {@code workerId}'s entry of
     * {@code p2p_init_ports}, demanding {@code p2p_token} when one is set, else the token the
     * deployment secret gives ({@code deployment_secret_file}), if any.
     *
     * @throws IOException when the address cannot be bound
     */
    public static P2pTransferServer start(LMCacheEngine engine, P2pSettings settings) throws IOException {
        Objects.requireNonNull(settings, "settings");
        return start(engine, settings.host(), settings.portOf(engine.metadata().workerId()),
                Optional.of(DeploymentSecret.p2pToken(engine.config(), settings)), LmServerLimits.defaults());
    }

    /**
     * Serves {@code engine}'s CPU tier and (when it has one) its disk tier on {@code host:port}.
     *
     * @param host  the address to bind, which is also the address peers are told
     * @param port  the port, 0 for any free one
     * @param token the secret every connection must present first, or empty
     */
    public static P2pTransferServer start(LMCacheEngine engine, String host, int port, Optional<String> token,
                                          LmServerLimits limits) throws IOException {
        Objects.requireNonNull(engine, "engine");
        List<StorageBackend> tiers = new ArrayList<>(2);
        tiers.add(engine.storage().tier(LocalCpuBackend.NAME).orElseThrow());
        engine.storage().tier(LocalDiskBackend.NAME).ifPresent(tiers::add);
        EngineTierStore store = new EngineTierStore(tiers);
        LmCacheServer server = LmCacheServer.startOver(InetAddress.getByName(host), port, store, token, MAX_FRAME_BYTES,
                limits);
        return new P2pTransferServer(server, store, host);
    }

    /** What peers are told to connect to: {@code host:port} (LMCache's {@code peer_init_url}). */
    public String peerInitUrl() {
        String host = advertisedHost.contains(":") ? "[" + advertisedHost + "]" : advertisedHost;
        return host + ":" + server.port();
    }

    /** The bound port. */
    public int port() {
        return server.port();
    }

    /** The server's counters (connections, gets, hits, refused puts, auth failures, ...). */
    public LmCacheServer.Stats stats() {
        return server.stats();
    }

    /** Chunks and bytes served to peers, writes refused. */
    public EngineTierStore.Served served() {
        return store.served();
    }

    /** Stops serving; close it before the engine, whose memory it serves. */
    @Override
    public void close() {
        server.close();
    }

    @Override
    public String toString() {
        return "P2pTransferServer[" + peerInitUrl() + "]";
    }
}
