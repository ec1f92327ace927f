package lmcache4j.bench.pd;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.ReentrantLock;

import com.github.tjake.jlama.model.AbstractModel;

import lmcache4j.engine.LMCacheEngine;
import lmcache4j.engine.config.LMCacheEngineConfig;
import lmcache4j.engine.config.PdSettings;
import lmcache4j.engine.connector.KvConnector;
import lmcache4j.engine.pd.PdBackend;
import lmcache4j.engine.pd.PdPeer;
import lmcache4j.engine.pd.PdReceiver;
import lmcache4j.engine.pd.PdSender;
import lmcache4j.engine.pd.PdTransfer;
import lmcache4j.engine.security.DeploymentSecret;
import lmcache4j.jlama.CachedPrefill;
import lmcache4j.server.pd.PdWorkerApi;
import lmcache4j.server.pd.PdWorkerServer;

/**
 * A PD role over a Jlama model: a <b>prefiller</b> computes a prompt's KV batch by batch and pushes
 * each chunk to the decoder the proxy names ({@link CachedPrefill#prefill(int[], PdTransfer)});
 * a <b>decoder</b> serves its PD ports and generates from the pushed KV, computing only what did not
 * arrive; a <b>colocated</b> worker does both in one process (the baseline PD is compared with).
 *
 * <p>Requests run concurrently, each with its own Jlama KV buffer; every forward call (a prefill
 * batch, a decode step) takes one process-wide fair lock, so a decode step waits for at most one
 * batch, as a serving engine interleaves them.
 */
public final class JlamaPdWorker implements PdWorkerServer.Worker, AutoCloseable {
    /** The role and the {@code pd_role} it needs. */
    public enum Role {
        PREFILLER("prefiller", Optional.of(PdSettings.Role.SENDER)),
        DECODER("decoder", Optional.of(PdSettings.Role.RECEIVER)),
        COLOCATED("colocated", Optional.empty());

        private final String label;
        private final Optional<PdSettings.Role> pdRole;

        Role(String label, Optional<PdSettings.Role> pdRole) {
            this.label = label;
            this.pdRole = pdRole;
        }

        /** Its name on the command line and in {@code /status}. */
        public String label() {
            return label;
        }

        /** The {@code pd_role} its engine has; empty for a colocated worker (no PD). */
        public Optional<PdSettings.Role> pdRole() {
            return pdRole;
        }

        /** The role called {@code label}. */
        public static Role of(String label) {
            for (Role r : values()) {
                if (r.label.equals(label)) {
                    return r;
                }
            }
            throw new IllegalArgumentException("a PD role is prefiller, decoder or colocated, not '" + label + "'");
        }
    }

    private final Role role;
    private final AbstractModel model;
    private final String modelName;
    private final LMCacheEngine engine;
    private final Optional<PdSender> sender;
    private final Optional<PdReceiver> receiver;
    private final Lock forward = new ReentrantLock(true);

    private JlamaPdWorker(Role role, AbstractModel model, String modelName, LMCacheEngine engine, Optional<PdSender> sender,
                          Optional<PdReceiver> receiver) {
        this.role = role;
        this.model = model;
        this.modelName = modelName;
        this.engine = engine;
        this.sender = sender;
        this.receiver = receiver;
    }

    /** Why a prefiller without a proxy is refused: the proxy waits for its notice before it calls the decoder. */
    static final String NEEDS_PROXY = "a prefiller needs pd_proxy_host and pd_proxy_port: where the PD proxy listens for "
            + "the notice that a request's KV is ready (./lmcache4j pd-proxy --notice-port)";

    /**
     * Starts {@code role} over {@code model}: its engine (from {@code config}, whose {@code pd_role}
     * must be the role's) and, for a decoder, its PD ports.
     *
     * @throws IllegalArgumentException when the config does not fit the role, naming what to set
     * @throws IOException              when the decoder's PD ports cannot be bound
     */
    public static JlamaPdWorker start(Role role, AbstractModel model, String modelName, LMCacheEngineConfig config)
            throws IOException {
        Objects.requireNonNull(role, "role");
        Optional<PdSettings.Role> pd = config.pd().map(PdSettings::role);
        if (!pd.equals(role.pdRole())) {
            throw new IllegalArgumentException("a " + role.label() + " needs " + role.pdRole().map(r -> "enable_pd: true and "
                    + "pd_role: " + r.configName()).orElse("enable_pd: false") + " in its engine config, not "
                    + pd.map(r -> "pd_role: " + r.configName()).orElse("enable_pd: false"));
        }
        if (role == Role.PREFILLER && config.pd().flatMap(PdSettings::proxyHost).isEmpty()) {
            throw new IllegalArgumentException(NEEDS_PROXY);
        }
        LMCacheEngine engine = LMCacheEngine.create(config, CachedPrefill.metadata(model, modelName), KvConnector.host(1),
                List.of());
        try {
            Optional<PdSender> sender = role == Role.PREFILLER ? Optional.of(PdSender.create(engine)) : Optional.empty();
            Optional<PdReceiver> receiver = Optional.empty();
            try {
                receiver = role == Role.DECODER ? Optional.of(PdReceiver.start(engine)) : Optional.empty();
            } catch (IOException | RuntimeException e) {
                sender.ifPresent(PdSender::close);
                throw e;
            }
            return new JlamaPdWorker(role, model, modelName, engine, sender, receiver);
        } catch (IOException | RuntimeException e) {
            engine.close();
            throw e;
        }
    }

    @Override
    public String role() {
        return role.label();
    }

    @Override
    public PdWorkerApi.PrefillReply prefill(PdWorkerApi.PrefillCall call) {
        PdSender s = sender.orElseThrow(() -> new UnsupportedOperationException("POST /prefill is a prefiller's"));
        int worker = engine.metadata().workerId();
        PdWorkerApi.ReceiverSpec r = call.receiver();
        if (worker >= r.ranks()) {
            throw new IllegalArgumentException("the receiver has " + r.ranks() + " rank(s); this prefiller is worker " + worker);
        }
        PdPeer peer = new PdPeer(r.host(), r.initPorts().get(worker), r.allocPorts().get(worker));
        try (CachedPrefill prefill = new CachedPrefill(engine, model, forward)) {
            PdTransfer push = s.begin(call.reqId(), engine.prepare(call.tokens(), Map.of()), peer);
            try (CachedPrefill.Prefill p = prefill.prefill(call.tokens(), push)) {
                PdTransfer.Result pushed = p.pushResult().orElseThrow();
                return new PdWorkerApi.PrefillReply(call.reqId(), pushed.pushedChunks(), pushed.alreadySentChunks(),
                        pushed.refusedChunks(), pushed.failedChunks(), pushed.pushedBytes(), pushed.stopReason(),
                        pushed.notified(), p.timeToFirstTokenNanos() / 1e6, pushed.drainNanos() / 1e6);
            }
        }
    }

    @Override
    public PdWorkerApi.DecodeReply decode(PdWorkerApi.DecodeCall call) {
        if (role == Role.PREFILLER) {
            throw new UnsupportedOperationException("POST /decode is a decoder's");
        }
        long arrived = System.nanoTime();
        try (CachedPrefill prefill = new CachedPrefill(engine, model, forward);
             CachedPrefill.Prefill p = prefill.prefill(call.tokens())) {
            int[] tokens = p.decode(call.maxTokens());
            long done = System.nanoTime();
            long[] at = p.tokenTimesNanos();
            double[] times = new double[at.length];
            for (int i = 0; i < at.length; i++) {
                times[i] = (at[i] - arrived) / 1e6;
            }
            return new PdWorkerApi.DecodeReply(tokens, p.cachedTokens(), p.computedTokens(), times[0],
                    (done - arrived) / 1e6, times, call.returnLogits() ? Optional.of(p.logits()) : Optional.empty());
        }
    }

    /** The deployment's PD token, whose bearer its HTTP API demands; empty for a colocated worker (no PD). */
    public Optional<byte[]> pdToken() {
        return engine.config().pd().map(pd -> DeploymentSecret.pdToken(engine.config(), pd).getBytes(StandardCharsets.UTF_8));
    }

    @Override
    public Map<String, Object> status() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("model", modelName);
        receiver.ifPresent(r -> {
            m.put("pd_peer_host", r.peer().host());
            m.put("pd_peer_init_port", List.of((long) r.peer().initPort()));
            m.put("pd_peer_alloc_port", List.of((long) r.peer().allocPort()));
            PdBackend.Stats t = r.tier().stats();
            Map<String, Object> tier = new LinkedHashMap<>();
            tier.put("allocated_chunks", t.allocatedChunks());
            tier.put("already_sent_chunks", t.alreadySentChunks());
            tier.put("refused_chunks", t.refusedChunks());
            tier.put("refused_requests", t.refusedRequests());
            tier.put("landed_chunks", t.landedChunks());
            tier.put("landed_bytes", t.landedBytes());
            tier.put("tag_failures", t.tagFailures());
            tier.put("late_writes", t.lateWrites());
            tier.put("expired_pending", t.expiredPending());
            tier.put("expired_unclaimed", t.expiredUnclaimed());
            tier.put("served_chunks", t.servedChunks());
            tier.put("held_chunks", (long) t.heldChunks());
            tier.put("used_bytes", t.usedBytes());
            tier.put("capacity_bytes", t.capacityBytes());
            tier.put("auth_failures", r.stats().authFailures());
            m.put("pd_buffer", tier);
        });
        sender.ifPresent(s -> {
            PdSender.Stats st = s.stats();
            Map<String, Object> push = new LinkedHashMap<>();
            push.put("pushed_chunks", st.pushedChunks());
            push.put("pushed_bytes", st.pushedBytes());
            push.put("already_sent_chunks", st.alreadySentChunks());
            push.put("refused_chunks", st.refusedChunks());
            push.put("failed_chunks", st.failedChunks());
            push.put("staging_timeouts", st.stagingTimeouts());
            push.put("notices", st.notices());
            push.put("notice_failures", st.noticeFailures());
            push.put("staging_used_bytes", st.stagingUsedBytes());
            m.put("push", push);
        });
        return m;
    }

    /** The decoder's PD ports, if this is a decoder. */
    public Optional<PdReceiver> receiver() {
        return receiver;
    }

    /** The engine (its tiers, for tests). */
    public LMCacheEngine engine() {
        return engine;
    }

    /** Closes the PD ports or the sender, then the engine (its leak check). The model stays open. */
    @Override
    public void close() {
        receiver.ifPresent(PdReceiver::close);
        sender.ifPresent(PdSender::close);
        engine.close();
    }
}
