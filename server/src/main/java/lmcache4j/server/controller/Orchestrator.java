package lmcache4j.server.controller;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

import lmcache4j.allocator.internal.threads.OwnedThreads;
import lmcache4j.engine.controller.message.ControlMsg;
import lmcache4j.engine.controller.message.ControlRetMsg;
import lmcache4j.engine.controller.message.ControllerMessage;
import lmcache4j.engine.controller.message.ErrorMsg;
import lmcache4j.engine.controller.message.MalformedMessageException;
import lmcache4j.engine.controller.message.Position;
import lmcache4j.server.controller.net.WorkerConnections;
import lmcache4j.server.controller.registry.WorkerInfo;
import lmcache4j.server.controller.registry.WorkerRegistry;

/**
 * The orchestration commands (LMCache's {@code ClearMsg}, {@code PinMsg}, {@code CompressMsg},
 * {@code DecompressMsg}, {@code MoveMsg}, {@code HealthMsg}, {@code QueryInstMsg},
 * {@code QueryWorkerInfoMsg}) turned into control messages to every worker of the instance
 * concerned, sent in parallel over the workers' REP sockets, and their answers combined as
 * LMCache's cluster executor combines them. Used by the HTTP API (request/reply) and for
 * orchestrators' fire-and-forget messages on the PULL socket. Never runs on the ingestion thread.
 */
final class Orchestrator implements AutoCloseable {
    /** A health error code for a worker that did not answer. */
    public static final int NO_ANSWER = -1;

    private final WorkerRegistry registry;
    private final WorkerConnections connections;
    private final ControllerMetrics metrics;
    /**
     * The most control requests in flight to workers at once. An instance's workers are asked in
     * parallel up to this many; beyond it they queue, so an instance of 500 silent workers costs 64
     * threads (and ⌈500/64⌉ request timeouts), not 500 per concurrent HTTP request (2,030 were seen).
     */
    static final int FORWARD_THREADS = 64;
    /** Forwarding is interrupted at close; a thread stuck past this is named in a warning. */
    private static final Duration JOIN_BOUND = Duration.ofSeconds(10);
    private final OwnedThreads threads = new OwnedThreads();
    /**
     * Platform threads, not virtual ones: a JeroMQ REQ socket blocks in its selector for up to the
     * request timeout, which would hold one of the few carrier threads the whole time. Idle ones exit.
     */
    private final ThreadPoolExecutor parallel = new ThreadPoolExecutor(FORWARD_THREADS, FORWARD_THREADS, 30, TimeUnit.SECONDS,
            new LinkedBlockingQueue<>(), threads.platformFactory("controller-forward"));

    /** What one worker answered, or why it did not. */
    private record Answer(WorkerInfo worker, Optional<ControlRetMsg> reply, Optional<String> problem) {
    }

    /**
     * A control command's outcome over an instance's workers.
     *
     * @param numTokens the token count the workers answered: one number for the instance, as LMCache
     *                  reports it (its tensor-parallel workers each hold a shard of the same tokens);
     *                  the largest when they differ, which {@code errors} then records
     * @param errors    worker ({@code instance:worker}) to what went wrong, for those that failed
     * @param workers   how many workers were asked
     */
    public record Outcome(String eventId, long numTokens, Map<String, String> errors, int workers) {
        /** Whether every worker asked failed. */
        public boolean allFailed() {
            return workers > 0 && errors.size() == workers;
        }
    }

    /** A health check's outcome: worker id to error code (0 healthy, {@link #NO_ANSWER} no answer). */
    public record Health(String eventId, Map<Integer, Integer> errorCodes, Map<String, String> errors) {
    }

    /** The instance a request named has no registered worker. */
    public static final class UnknownInstanceException extends RuntimeException {
        UnknownInstanceException(String instanceId) {
            super("no registered worker of instance '" + instanceId + "'");
        }
    }

    /** A move to another instance whose worker registered no P2P URL: nothing could receive the chunks. */
    public static final class NoPeerUrlException extends RuntimeException {
        NoPeerUrlException(String message) {
            super(message);
        }
    }

    /**
     * What LMCache's controller answers to {@code CheckFinishMsg}: its cluster executor raises
     * {@code NotImplementedError}, so the request fails. lmcache4j answers the same, in words.
     */
    public static final String CHECK_FINISH_UNSUPPORTED = "check_finish is not implemented: LMCache's controller "
            + "refuses it too (its cluster executor raises NotImplementedError), and LMCache's workers do not answer "
            + "CheckFinishWorkerMsg";

    Orchestrator(WorkerRegistry registry, WorkerConnections connections, ControllerMetrics metrics) {
        this.registry = Objects.requireNonNull(registry);
        this.connections = Objects.requireNonNull(connections);
        this.metrics = Objects.requireNonNull(metrics);
        parallel.allowCoreThreadTimeOut(true);
    }

    /** {@code ClearMsg}: every worker of the instance drops what it holds in {@code location}. */
    public Outcome clear(String eventId, String instanceId, String location) {
        return tokensCommand(eventId, instanceId, id -> new ControlMsg.ClearWorkerMsg(id, location));
    }

    /** {@code PinMsg}: every worker of the instance pins the chunks of {@code tokens} in {@code location}. */
    public Outcome pin(String eventId, String instanceId, String location, int[] tokens) {
        return tokensCommand(eventId, instanceId, id -> new ControlMsg.PinWorkerMsg(id, location, tokens));
    }

    /** {@code CompressMsg}: every worker of the instance compresses the chunks of {@code tokens} (all when empty) in {@code location}. */
    public Outcome compress(String eventId, String instanceId, String method, String location, Optional<int[]> tokens) {
        return tokensCommand(eventId, instanceId, id -> new ControlMsg.CompressWorkerMsg(id, method, location, tokens));
    }

    /** {@code DecompressMsg}: the inverse of {@link #compress}. */
    public Outcome decompress(String eventId, String instanceId, String method, String location, Optional<int[]> tokens) {
        return tokensCommand(eventId, instanceId, id -> new ControlMsg.DecompressWorkerMsg(id, method, location, tokens));
    }

    /**
     * {@code MoveMsg}: the source instance's workers move (or, with {@code copy}, copy) chunks from
     * their {@code from.location()} to {@code to.location()} of instance {@code to.target()}. Each
     * source worker is paired with the destination worker of the same id (else the first), and
     * told the destination as LMCache's worker reads it: within one instance (a disk to CPU
     * prefetch) its own control address as {@code *:port}, which is how an LMCache worker
     * recognises an in-node move; across instances the destination's P2P URL, and a destination
     * that registered none is refused before anything is sent, as LMCache refuses it.
     */
    public Outcome move(String eventId, Position from, Position to, Optional<int[]> tokens, boolean copy) {
        List<WorkerInfo> destination = registry.workersOf(to.target());
        if (destination.isEmpty()) {
            throw new UnknownInstanceException(to.target());
        }
        boolean inNode = from.target().equals(to.target());
        Map<Integer, String> targets = new TreeMap<>();
        for (WorkerInfo source : registry.workersOf(from.target())) {
            WorkerInfo peer = destination.stream().filter(w -> w.key().workerId() == source.key().workerId()).findFirst()
                    .orElse(destination.getFirst());
            String url = inNode ? "*:" + source.port() : peer.peerInitUrl().orElseThrow(() -> new NoPeerUrlException(
                    "worker " + peer.key() + " of the destination registered no P2P URL (peer_init_url): enable P2P on it"));
            targets.put(source.key().workerId(), url);
        }
        return tokensCommand(eventId, from.target(), id -> {
            int worker = Integer.parseInt(id.substring(id.lastIndexOf('/') + 1));
            return new ControlMsg.MoveWorkerMsg(id, from.location(), new Position(targets.get(worker), to.location()), tokens,
                    Optional.of(copy));
        });
    }

    /** {@code HealthMsg}: every worker's error code. */
    public Health health(String eventId, String instanceId) {
        List<Answer> answers = ask(eventId, instanceId, ControlMsg.HealthWorkerMsg::new);
        Map<Integer, Integer> codes = new TreeMap<>();
        Map<String, String> errors = new TreeMap<>();
        for (Answer a : answers) {
            int code = NO_ANSWER;
            if (a.reply().orElse(null) instanceof lmcache4j.engine.controller.message.ControlRetMsg.HealthWorkerRetMsg h) {
                code = h.errorCode();
            } else {
                errors.put(a.worker().key().toString(), a.problem().orElse("unexpected reply " + a.reply().orElse(null)));
            }
            codes.put(a.worker().key().workerId(), code);
        }
        return new Health(eventId, codes, errors);
    }

    /** Closes the REQ socket to a worker that left (deregistered or timed out). */
    public void forget(WorkerInfo worker) {
        connections.forget(worker.replyAddress());
    }

    /** {@code QueryInstMsg}: the instance with a worker at {@code ip}. */
    public Optional<String> instanceAt(String ip) {
        return registry.workers().stream().filter(w -> w.ip().equals(ip)).map(w -> w.key().instanceId()).findFirst();
    }

    /**
     * {@code QueryWorkerInfoMsg}: the registered workers of an instance, those of {@code workerIds}
     * only when given, in worker-id order.
     */
    public List<lmcache4j.engine.controller.message.WorkerInfo> workerInfo(String instanceId, Optional<List<Integer>> workerIds) {
        List<WorkerInfo> workers = registry.workersOf(instanceId);
        if (workers.isEmpty()) {
            throw new UnknownInstanceException(instanceId);
        }
        return workers.stream()
                .filter(w -> workerIds.map(ids -> ids.contains(w.key().workerId())).orElse(true))
                .sorted(Comparator.comparingInt(w -> w.key().workerId()))
                .map(w -> new lmcache4j.engine.controller.message.WorkerInfo(w.key().instanceId(), w.key().workerId(), w.ip(),
                        w.port(), w.peerInitUrl(), w.registeredAt().toEpochMilli() / 1000.0,
                        w.lastHeartbeat().toEpochMilli() / 1000.0))
                .toList();
    }

    private Outcome tokensCommand(String eventId, String instanceId, Function<String, ControlMsg> message) {
        List<Answer> answers = ask(eventId, instanceId, message);
        Map<String, Long> counts = new TreeMap<>();
        Map<String, String> errors = new TreeMap<>();
        for (Answer a : answers) {
            ControlRetMsg r = a.reply().orElse(null);
            String worker = a.worker().key().toString();
            switch (r) {
                case ControlRetMsg.ClearWorkerRetMsg c -> counts.put(worker, c.numTokens());
                case ControlRetMsg.PinWorkerRetMsg p -> counts.put(worker, p.numTokens());
                case ControlRetMsg.CompressWorkerRetMsg c -> counts.put(worker, c.numTokens());
                case ControlRetMsg.DecompressWorkerRetMsg d -> counts.put(worker, d.numTokens());
                case ControlRetMsg.MoveWorkerRetMsg m -> counts.put(worker, m.numTokens());
                case ErrorMsg e -> errors.put(worker, "worker error: " + e.error());
                case null -> errors.put(worker, a.problem().orElse("no answer"));
                default -> errors.put(worker, "unexpected reply " + r);
            }
        }
        if (counts.values().stream().distinct().count() > 1) {
            // LMCache asserts the workers agree; lmcache4j reports the largest and says who differed.
            counts.forEach((w, n) -> errors.put(w, "workers answered different token counts: " + counts));
        }
        long tokens = counts.values().stream().mapToLong(Long::longValue).max().orElse(0);
        return new Outcome(eventId, tokens, errors, answers.size());
    }

    /** Sends one message per worker of the instance (its worker event id: {@code eventId/workerId}), in parallel. */
    private List<Answer> ask(String eventId, String instanceId, Function<String, ControlMsg> message) {
        List<WorkerInfo> workers = registry.workersOf(instanceId);
        if (workers.isEmpty()) {
            throw new UnknownInstanceException(instanceId);
        }
        List<Future<Answer>> futures = new ArrayList<>();
        for (WorkerInfo w : workers) {
            ControlMsg m = message.apply(eventId + "/" + w.key().workerId());
            futures.add(parallel.submit(() -> answer(w, m)));
        }
        List<Answer> answers = new ArrayList<>();
        for (int i = 0; i < workers.size(); i++) {
            WorkerInfo w = workers.get(i);
            answers.add(join(futures.get(i)).orElseGet(() -> new Answer(w, Optional.empty(), Optional.of("interrupted"))));
        }
        return answers;
    }

    private Answer answer(WorkerInfo w, ControlMsg m) {
        WorkerConnections.Reply r = connections.request(w.replyAddress(), Wire.encode(m));
        if (r.payload().isEmpty()) {
            metrics.forwardFailed("timeout");
            return new Answer(w, Optional.empty(), Optional.of("no reply within the request timeout ("
                    + r.failure().map(Enum::name).orElse("?").toLowerCase(Locale.ROOT) + ")"));
        }
        try {
            ControllerMessage reply = Wire.decode(r.payload().get());
            metrics.message(ControllerMetrics.Socket.WORKER_REQ, Wire.typeName(reply));
            if (reply instanceof ControlRetMsg c) {
                return new Answer(w, Optional.of(c), Optional.empty());
            }
            metrics.unknown(ControllerMetrics.Socket.WORKER_REQ);
            return new Answer(w, Optional.empty(), Optional.of("unexpected reply type " + Wire.typeName(reply)));
        } catch (MalformedMessageException e) {
            metrics.malformed(ControllerMetrics.Socket.WORKER_REQ);
            metrics.forwardFailed("malformed_reply");
            return new Answer(w, Optional.empty(), Optional.of("malformed reply: " + e.getMessage()));
        }
    }

    private static <T> Optional<T> join(Future<T> f) {
        try {
            return Optional.of(f.get());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return Optional.empty();
        } catch (ExecutionException e) {
            return Optional.empty();
        }
    }

    @Override
    public void close() {
        parallel.shutdownNow();
        threads.join(JOIN_BOUND);
    }
}
