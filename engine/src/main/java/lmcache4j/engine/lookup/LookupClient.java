package lmcache4j.engine.lookup;

import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

import lmcache4j.allocator.internal.threads.OwnedThreads;
import lmcache4j.engine.ModelMetadata;
import lmcache4j.engine.config.LMCacheEngineConfig;
import lmcache4j.engine.controller.ControllerKeys;
import lmcache4j.engine.key.ChunkHash;
import lmcache4j.engine.key.ChunkHasher;
import lmcache4j.engine.key.ChunkedTokenDatabase;
import lmcache4j.engine.key.HashAlgorithm;
import lmcache4j.engine.key.HashRange;
import lmcache4j.engine.key.KeyFactory;
import lmcache4j.engine.key.StorageKeys;
import lmcache4j.engine.key.TokenDatabase;
import lmcache4j.engine.security.CurveGate;
import lmcache4j.engine.security.DeploymentSecret;
import lmcache4j.engine.zmq.OwnedZContext;

/**
 * The scheduler's side of the lookup service (LMCache's {@code LMCacheAsyncLookupClient}): hashes
 * a prompt into chunks itself, pushes the lookup to every worker that runs a lookup server, and
 * collects their answers on its own PULL socket; the request's answer is the minimum over the
 * workers. {@link #lookup} never blocks (empty while the answers are outstanding, as LMCache's
 * {@code None}); {@link #lookupBlocking} waits up to a deadline. An answer that has not come within
 * {@code lookup_timeout_ms} counts as 0 hit tokens, so the serving engine recomputes.
 *
 * <p>Thread-safe. Malformed answers are counted and dropped.
 */
public final class LookupClient implements AutoCloseable {
    /** The largest answer taken: an answer is a few counts; a longer one disconnects its sender. */
    static final long MAX_ANSWER_BYTES = 1L << 20;
    private static final System.Logger LOG = System.getLogger(LookupClient.class.getName());
    private static final int POLL_MS = 50;
    private static final Duration JOIN_BOUND = Duration.ofSeconds(5);

    private final TokenDatabase tokens;
    private final ControllerKeys.Scheme scheme;
    private final long timeoutNanos;
    private final int ranks;
    private final ZContext context = new OwnedZContext("lookup-client", 1);
    /** Admits only the deployment's key to the answer socket, with a deployment secret; else null. */
    private final CurveGate gate;
    private final List<ZMQ.Socket> pushes = new ArrayList<>();
    private final ZMQ.Socket pull;
    private final OwnedThreads threads = new OwnedThreads();
    private volatile boolean running = true;

    private final ReentrantLock lock = new ReentrantLock();
    private final Condition answered = lock.newCondition();
    /** Lookups sent and not cleared: their answers so far, or their result. */
    private final Map<String, Status> statuses = new HashMap<>();

    private final LongAdder sent = new LongAdder();
    private final LongAdder answers = new LongAdder();
    private final LongAdder malformed = new LongAdder();
    private final LongAdder unexpected = new LongAdder();
    private final LongAdder timedOut = new LongAdder();
    private final LongAdder unsent = new LongAdder();

    /** One lookup's state: answers collected until every rank has answered, then the result. */
    private static final class Status {
        final long sentNanos = System.nanoTime();
        int answers;
        int min = Integer.MAX_VALUE;
        int result = -1;
    }

    /**
     * The client's counters: lookups sent, answers received, answers malformed or for no pending
     * lookup (dropped), lookups that timed out, and sends no worker took (its queue full).
     */
    public record Stats(long sent, long answers, long malformed, long unexpected, long timedOut, long unsent) {
    }

    private LookupClient(LookupEndpoints endpoints, TokenDatabase tokens, ControllerKeys.Scheme scheme, Duration timeout,
                         Optional<DeploymentSecret> secret) {
        this.tokens = Objects.requireNonNull(tokens, "tokens");
        this.scheme = Objects.requireNonNull(scheme, "scheme");
        this.timeoutNanos = timeout.toNanos();
        this.ranks = endpoints.serverWorkerIds().size();
        CurveGate opened = null;
        try {
            opened = secret.map(s -> CurveGate.open(context, s, "lookup-client")).orElse(null);
            pull = context.createSocket(SocketType.PULL);
            secret.ifPresent(s -> s.serve(pull));
            pull.setLinger(0);
            pull.setMaxMsgSize(MAX_ANSWER_BYTES);
            pull.setReceiveTimeOut(POLL_MS);
            pull.bind(endpoints.schedulerUrl());
            for (int rank : endpoints.serverWorkerIds()) {
                ZMQ.Socket push = context.createSocket(SocketType.PUSH);
                secret.ifPresent(s -> s.connectAsMember(push));
                push.setLinger(0);
                push.connect(endpoints.workerUrl(rank));
                pushes.add(push);
            }
        } catch (RuntimeException e) {
            if (opened != null) {
                opened.close(); // its thread closes its own socket, before the context closes the rest
            }
            context.close();
            throw new IllegalStateException("cannot open the lookup client's sockets (" + endpoints + "): " + e, e);
        }
        this.gate = opened;
        threads.start("lookup-client", this::receive);
        LOG.log(Level.INFO, () -> "lookup client: answers on " + endpoints.schedulerUrl() + ", asks workers "
                + endpoints.serverWorkerIds());
    }

    /**
     * A client for the deployment a config describes: the endpoints of {@link LookupEndpoints#of},
     * the engine's chunking and hashing ({@code chunk_size}, {@code save_unfull_chunk},
     * {@code pre_caching_hash_algorithm}, {@code hash_seed}, {@code storage_chunk_keys}, {@code controller_chunk_keys}) so its
     * keys are the workers', and {@code lookup_timeout_ms}.
     */
    public static LookupClient open(LMCacheEngineConfig config, ModelMetadata model) {
        if (config.enableBlending()) {
            throw new IllegalArgumentException("the lookup client chunks prompts by chunk_size; enable_blending "
                    + "needs a separator-aware token database");
        }
        ChunkHasher hasher = ChunkHasher.of(HashAlgorithm.fromName(config.preCachingHashAlgorithm()), config.hashSeed());
        KeyFactory keys = new KeyFactory(model.modelName(), model.worldSize(), model.workerId(), model.kvDtype());
        return open(LookupEndpoints.of(config, model.worldSize(), model.mla()),
                new ChunkedTokenDatabase(config.chunkSize(), config.saveUnfullChunk(), hasher, keys,
                        StorageKeys.fromName(config.storageChunkKeys())),
                ControllerKeys.Scheme.fromName(config.controllerChunkKeys()), Duration.ofMillis(config.lookupTimeoutMs()),
                DeploymentSecret.fromConfig(config));
    }

    /**
     * A client on {@code endpoints}, hashing with {@code tokens} and keying chunks by {@code scheme};
     * lookups unanswered after {@code timeout} count as 0.
     */
    public static LookupClient open(LookupEndpoints endpoints, TokenDatabase tokens, ControllerKeys.Scheme scheme,
                                    Duration timeout) {
        return open(endpoints, tokens, scheme, timeout, Optional.empty());
    }

    /** As above; with {@code secret}, every socket uses the deployment's CURVE keys ({@link DeploymentSecret}). */
    @SuppressWarnings("exports") // DeploymentSecret is exported to lmcache4j's own modules only
    public static LookupClient open(LookupEndpoints endpoints, TokenDatabase tokens, ControllerKeys.Scheme scheme,
                                    Duration timeout, Optional<DeploymentSecret> secret) {
        return new LookupClient(endpoints, tokens, scheme, timeout, secret);
    }

    /** The request a lookup of {@code prompt} sends: its chunks' controller keys and token counts. */
    public LookupRequest request(int[] prompt, String lookupId, Map<String, String> requestConfigs) {
        List<HashRange> chunks = tokens.hashTokens(prompt);
        List<ChunkHash> digests = new ArrayList<>(chunks.size());
        int[] ends = new int[chunks.size()];
        int[] counts = new int[chunks.size()];
        for (int i = 0; i < counts.length; i++) {
            digests.add(chunks.get(i).hash());
            counts[i] = chunks.get(i).length();
            ends[i] = chunks.get(i).end();
        }
        long[] hashes = ControllerKeys.keys(scheme, tokens.hasher(), prompt, digests, ends);
        return new LookupRequest(lookupId, hashes, counts, requestConfigs);
    }

    /**
     * LMCache's non-blocking lookup: the first call for {@code lookupId} sends the lookup and returns
     * empty; later calls return empty while answers are outstanding, then the hit tokens (kept until
     * {@link #clearLookupStatus}), or 0 once {@code lookup_timeout_ms} has passed without them.
     */
    public OptionalInt lookup(int[] prompt, String lookupId, Map<String, String> requestConfigs) {
        Objects.requireNonNull(lookupId, "lookupId");
        lock.lock();
        try {
            Status status = statuses.get(lookupId);
            if (status != null) {
                return resultOrTimeout(lookupId, status);
            }
        } finally {
            lock.unlock();
        }
        send(request(prompt, lookupId, requestConfigs));
        return OptionalInt.empty();
    }

    /**
     * Sends the lookup of {@code prompt} (unless one for {@code lookupId} is outstanding) and waits
     * up to {@code deadline} (and at most {@code lookup_timeout_ms}) for every worker's answer.
     *
     * @return the hit tokens, or 0 when the answers did not come in time
     */
    public int lookupBlocking(int[] prompt, String lookupId, Map<String, String> requestConfigs, Duration deadline)
            throws InterruptedException {
        lookup(prompt, lookupId, requestConfigs);
        long end = System.nanoTime() + Math.min(deadline.toNanos(), timeoutNanos);
        lock.lock();
        try {
            while (true) {
                Status status = statuses.get(lookupId);
                if (status == null) {
                    return 0; // cleared by another thread
                }
                if (status.result >= 0) {
                    return status.result;
                }
                long left = end - System.nanoTime();
                if (left <= 0) {
                    statuses.remove(lookupId);
                    timedOut.increment();
                    return 0;
                }
                answered.awaitNanos(left);
            }
        } finally {
            lock.unlock();
        }
    }

    /** Pushes {@code request} to every worker that runs a lookup server (LMCache's 4 frames). */
    public void send(LookupRequest request) {
        List<byte[]> frames = LookupWire.encodeRequest(request);
        lock.lock();
        try {
            statuses.put(request.lookupId(), new Status());
            for (ZMQ.Socket push : pushes) {
                if (!sendFrames(push, frames)) {
                    unsent.increment();
                }
            }
        } finally {
            lock.unlock();
        }
        sent.increment();
    }

    /** Forgets the lookup's answers (LMCache's {@code clear_lookup_status}). */
    public void clearLookupStatus(String lookupId) {
        lock.lock();
        try {
            statuses.remove(lookupId);
        } finally {
            lock.unlock();
        }
    }

    public Stats stats() {
        return new Stats(sent.sum(), answers.sum(), malformed.sum(), unexpected.sum(), timedOut.sum(), unsent.sum());
    }

    private OptionalInt resultOrTimeout(String lookupId, Status status) {
        if (status.result >= 0) {
            return OptionalInt.of(status.result);
        }
        if (System.nanoTime() - status.sentNanos > timeoutNanos) {
            LOG.log(Level.WARNING, "lookup " + lookupId + " unanswered after " + TimeUnit.NANOSECONDS.toMillis(timeoutNanos)
                    + " ms: 0 cached tokens, the request is recomputed");
            statuses.remove(lookupId);
            timedOut.increment();
            return OptionalInt.of(0);
        }
        return OptionalInt.empty();
    }

    private static boolean sendFrames(ZMQ.Socket socket, List<byte[]> frames) {
        for (int i = 0; i < frames.size(); i++) {
            boolean more = i < frames.size() - 1;
            // DONTWAIT: a worker that is down must not block the scheduler; its queue fills and sends fail
            if (!socket.send(frames.get(i), (more ? ZMQ.SNDMORE : 0) | ZMQ.DONTWAIT)) {
                return false;
            }
        }
        return true;
    }

    private void receive() {
        try {
            while (running) {
                List<byte[]> frames = MultipartReader.read(pull, LookupWire.RESPONSE_FRAMES);
                if (frames == null) {
                    continue;
                }
                LookupResponse response;
                try {
                    response = LookupWire.decodeResponse(frames);
                } catch (MalformedLookupMessageException e) {
                    malformed.increment();
                    LOG.log(Level.DEBUG, "dropped a malformed lookup answer: " + e.getMessage());
                    continue;
                }
                answers.increment();
                record(response);
            }
        } catch (RuntimeException e) {
            if (running) {
                LOG.log(Level.ERROR, "the lookup client's receiver stopped: " + e, e);
            }
        } finally {
            pull.close();
        }
    }

    private void record(LookupResponse response) {
        lock.lock();
        try {
            Status status = statuses.get(response.lookupId());
            if (status == null || status.result >= 0) {
                unexpected.increment(); // cleared, timed out, or answered by more workers than asked
                return;
            }
            status.min = Math.min(status.min, response.hitTokens());
            if (++status.answers == ranks) {
                status.result = status.min;
                answered.signalAll();
            }
        } finally {
            lock.unlock();
        }
    }

    /** Stops the receiver and closes the sockets; lookups outstanding stay unanswered. */
    @Override
    public void close() {
        if (!running) {
            return;
        }
        running = false;
        threads.join(JOIN_BOUND);
        lock.lock();
        try {
            pushes.forEach(ZMQ.Socket::close);
        } finally {
            lock.unlock();
        }
        if (gate != null) {
            gate.close(); // its thread closes its own socket, before the context closes the rest
        }
        context.close();
    }
}
