package lmcache4j.engine.pd;

import java.nio.charset.StandardCharsets;
import java.util.Objects;
import java.util.Optional;

import lmcache4j.allocator.HostArenaOptions;
import lmcache4j.allocator.host.HostArena;
import lmcache4j.allocator.tensor.TensorMemoryAllocator;
import lmcache4j.engine.LMCacheEngine;
import lmcache4j.engine.PreparedRequest;
import lmcache4j.engine.config.PdSettings;
import lmcache4j.engine.pd.wire.PdPusher;
import lmcache4j.engine.security.DeploymentSecret;

/**
 * A prefiller's side of disaggregated prefill ({@code enable_pd} with {@code pd_role: sender}):
 * pushes each chunk of a request's KV to the decoder the proxy named as soon as the prefill has
 * computed it, over lmcache4j's authenticated TCP channel, then tells the proxy
 * ({@code pd_proxy_host:pd_proxy_port}) the request is ready. Without a proxy (an embedder that
 * drives both sides itself) nobody is told: {@link PdTransfer#finish()} returning is the signal.
 *
 * <pre>{@code
 * try (PdSender sender = PdSender.create(engine)) {
 *     PdTransfer push = sender.begin(requestId, engine.prepare(tokens, Map.of()), decoder);
 *     for (each batch of positions the model computes) push.pushComputed(kv, positionsComputed);
 *     PdTransfer.Result r = push.finish();
 * }
 * }</pre>
 *
 * <p>Chunks wait in a staging buffer of {@code pd_buffer_size} bytes while they are sent; one thread
 * sends them. Thread-safe; close it before the engine.
 */
public final class PdSender implements AutoCloseable {
    /**
     * Counters over every request, a snapshot.
     *
     * @param pushedChunks      chunks written into decoders' buffers
     * @param pushedBytes       their bytes
     * @param alreadySentChunks chunks a decoder held already
     * @param refusedChunks     chunks a decoder had no room for
     * @param failedChunks      chunks not pushed because their request's push stopped
     * @param stagingTimeouts   requests that found no staging room within the timeout
     * @param notices           ready notices the proxy acknowledged
     * @param noticeFailures    ready notices that could not be delivered
     * @param stagingUsedBytes  staging memory holding chunks not sent yet, now
     */
    public record Stats(long pushedChunks, long pushedBytes, long alreadySentChunks, long refusedChunks,
                        long failedChunks, long stagingTimeouts, long notices, long noticeFailures, long stagingUsedBytes) {
    }

    private final PdPusher pusher;

    private PdSender(PdPusher pusher) {
        this.pusher = pusher;
    }

    /**
     * The sender of {@code engine}, whose config has {@code enable_pd}, {@code pd_role: sender},
     * {@code pd_buffer_size}, optionally {@code pd_proxy_host} and {@code pd_proxy_port}, and a token
     * ({@code extra_config.p2p_token} or {@code deployment_secret_file}).
     *
     * @throws IllegalArgumentException when the config is not a PD sender's, naming what is missing
     */
    public static PdSender create(LMCacheEngine engine) {
        Objects.requireNonNull(engine, "engine");
        PdSettings pd = engine.config().pd().orElseThrow(() -> new IllegalArgumentException(
                "a PD sender needs enable_pd: true and pd_role: sender in the engine's config"));
        if (pd.role() != PdSettings.Role.SENDER) {
            throw new IllegalArgumentException("a PD sender needs pd_role: sender, this engine's is " + pd.role().configName());
        }
        long chunkBytes = engine.metadata().chunkBytes(engine.config().chunkSize());
        if (pd.bufferBytes() < chunkBytes) {
            throw new IllegalArgumentException("pd_buffer_size " + pd.bufferBytes() + " holds no full chunk of " + chunkBytes
                    + " bytes: the sender stages each chunk there while it is sent");
        }
        byte[] token = DeploymentSecret.pdToken(engine.config(), pd).getBytes(StandardCharsets.UTF_8);
        HostArena arena = HostArena.allocate(pd.bufferBytes(), HostArenaOptions.DEFAULT.withPrefault(true));
        return new PdSender(new PdPusher(TensorMemoryAllocator.create("PDSenderStaging", arena,
                TensorMemoryAllocator.DEFAULT_ALIGNMENT), engine.metadata(), engine.config().chunkSize(), Optional.of(token),
                pd.timeout(), pd.proxyHost(), pd.proxyPort().orElse(0)));
    }

    /**
     * Starts pushing {@code request}'s chunks (every keyed chunk, the last partial one included when
     * the engine saves unfull chunks, as {@code enable_pd} makes it) to {@code receiver}, under the id
     * the proxy gave the request.
     */
    public PdTransfer begin(String requestId, PreparedRequest request, PdPeer receiver) {
        Objects.requireNonNull(requestId, "requestId");
        Objects.requireNonNull(request, "request");
        Objects.requireNonNull(receiver, "receiver");
        if (requestId.isBlank() || requestId.length() > 256) {
            throw new IllegalArgumentException("a request id has 1 to 256 characters, got " + requestId.length());
        }
        return new PdTransfer(pusher.begin(requestId, request.chunks(),
                new PdPusher.Peer(receiver.host(), receiver.initPort(), receiver.allocPort())));
    }

    /** The counters now. */
    public Stats stats() {
        PdPusher.Stats s = pusher.stats();
        return new Stats(s.pushedChunks(), s.pushedBytes(), s.alreadySentChunks(), s.refusedChunks(), s.failedChunks(),
                s.stagingTimeouts(), s.notices(), s.noticeFailures(), pusher.staging().stats().usedBytes());
    }

    /** Stops sending (queued chunks are dropped), closes its connections and its staging buffer. */
    @Override
    public void close() {
        pusher.close();
    }
}
