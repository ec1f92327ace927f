package lmcache4j.server.controller;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.Function;

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
 * The orchestration commands (LMCache's {@code ClearMsg}, {@code PinMsg}, {@code MoveMsg},
 * {@code HealthMsg}, {@code CheckFinishMsg}, {@code QueryInstMsg}) turned into control messages to
 * every worker of the instance concerned, sent in parallel over the workers' REP sockets, and
 * their answers combined. Used by the HTTP API (request/reply) and for orchestrators'
 * fire-and-forget messages on the PULL socket. Never runs on the ingestion thread.
 */
final class Orchestrator implements AutoCloseable {
    /** Events remembered for check-finish; the oldest are forgotten past this. */
    static final int MAX_EVENTS = 10_000;
    /** A health error code for a worker that did not answer. */
    public static final int NO_ANSWER = -1;

    private final WorkerRegistry registry;
    private final WorkerConnections connections;
    private final ControllerMetrics metrics;
    /**
     * Platform threads, not virtual ones: a JeroMQ REQ socket blocks in its selector for up to the
     * request timeout, which would hold one of the few carrier threads the whole time.
     */
    private final ExecutorService parallel = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "lmcache4j-controller-forward");
        t.setDaemon(true);
        return t;
    });
    private final Map<String, List<WorkerEvent>> events = Collections.synchronizedMap(
            new LinkedHashMap<>(16, 0.75f, false) {
                @Override
                protected boolean removeEldestEntry(Map.Entry<String, List<WorkerEvent>> eldest) {
                    return size() > MAX_EVENTS;
                }
            });

    private record WorkerEvent(String address, String workerEventId, String worker) {
    }

    /** What one worker answered, or why it did not. */
    private record Answer(WorkerInfo worker, Optional<ControlRetMsg> reply, Optional<String> problem) {
    }

    /**
     * A control command's outcome over an instance's workers.
     *
     * @param numTokens the workers' token counts, summed
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

    Orchestrator(WorkerRegistry registry, WorkerConnections connections, ControllerMetrics metrics) {
        this.registry = Objects.requireNonNull(registry);
        this.connections = Objects.requireNonNull(connections);
        this.metrics = Objects.requireNonNull(metrics);
    }

    /** {@code ClearMsg}: every worker of the instance drops what it holds in {@code location}. */
    public Outcome clear(String eventId, String instanceId, String location) {
        return tokensCommand(eventId, instanceId, id -> new ControlMsg.ClearWorkerMsg(id, location));
    }

    /** {@code PinMsg}: every worker of the instance pins the chunks of {@code tokens} in {@code location}. */
    public Outcome pin(String eventId, String instanceId, String location, int[] tokens) {
        return tokensCommand(eventId, instanceId, id -> new ControlMsg.PinWorkerMsg(id, location, tokens));
    }

    /**
     * {@code MoveMsg}: the source instance's workers move (or copy) chunks from their
     * {@code from.location()} to {@code to.location()} of instance {@code to.target()}; within one
     * instance, disk to CPU is a prefetch. Each worker is told the destination worker's P2P URL
     * (same worker id), or its control address when it has none.
     */
    public Outcome move(String eventId, Position from, Position to, Optional<int[]> tokens, Optional<Boolean> copy) {
        List<WorkerInfo> destination = registry.workersOf(to.target());
        if (destination.isEmpty()) {
            throw new UnknownInstanceException(to.target());
        }
        return tokensCommand(eventId, from.target(), id -> {
            int worker = Integer.parseInt(id.substring(id.lastIndexOf('/') + 1));
            WorkerInfo peer = destination.stream().filter(w -> w.key().workerId() == worker).findFirst()
                    .orElse(destination.getFirst());
            String url = peer.peerInitUrl().orElse(peer.replyAddress());
            return new ControlMsg.MoveWorkerMsg(id, from.location(), new Position(url, to.location()), tokens, copy);
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

    /**
     * {@code CheckFinishMsg}: asks the workers of an earlier event whether they finished it. The
     * answer is their common status, {@code "unknown_event"} for an event this controller did not
     * send (or forgot), or {@code "worker:status, ..."} when they differ or some did not answer.
     */
    public String checkFinish(String eventId) {
        List<WorkerEvent> sent = events.get(eventId);
        if (sent == null) {
            return "unknown_event";
        }
        Map<String, String> statuses = new TreeMap<>();
        List<Future<String>> futures = new ArrayList<>();
        for (WorkerEvent e : sent) {
            futures.add(parallel.submit(() -> {
                ControlRetMsg reply = request(e.address(), new ControlMsg.CheckFinishWorkerMsg(e.workerEventId())).orElse(null);
                return reply instanceof ControlRetMsg.CheckFinishWorkerRetMsg r ? r.status() : "no_answer";
            }));
        }
        for (int i = 0; i < sent.size(); i++) {
            statuses.put(sent.get(i).worker(), join(futures.get(i)).orElse("no_answer"));
        }
        List<String> distinct = statuses.values().stream().distinct().toList();
        if (distinct.size() == 1) {
            return distinct.getFirst();
        }
        StringBuilder sb = new StringBuilder();
        statuses.forEach((w, s) -> sb.append(sb.isEmpty() ? "" : ", ").append(w).append(':').append(s));
        return sb.toString();
    }

    /** Closes the REQ socket to a worker that left (deregistered or timed out). */
    public void forget(WorkerInfo worker) {
        connections.forget(worker.replyAddress());
    }

    /** {@code QueryInstMsg}: the instance with a worker at {@code ip}. */
    public Optional<String> instanceAt(String ip) {
        return registry.workers().stream().filter(w -> w.ip().equals(ip)).map(w -> w.key().instanceId()).findFirst();
    }

    private Outcome tokensCommand(String eventId, String instanceId, Function<String, ControlMsg> message) {
        List<Answer> answers = ask(eventId, instanceId, message);
        long tokens = 0;
        Map<String, String> errors = new TreeMap<>();
        for (Answer a : answers) {
            ControlRetMsg r = a.reply().orElse(null);
            switch (r) {
                case ControlRetMsg.ClearWorkerRetMsg c -> tokens += c.numTokens();
                case ControlRetMsg.PinWorkerRetMsg p -> tokens += p.numTokens();
                case ControlRetMsg.MoveWorkerRetMsg m -> tokens += m.numTokens();
                case ErrorMsg e -> errors.put(a.worker().key().toString(), "worker error: " + e.error());
                case null -> errors.put(a.worker().key().toString(), a.problem().orElse("no answer"));
                default -> errors.put(a.worker().key().toString(), "unexpected reply " + r);
            }
        }
        return new Outcome(eventId, tokens, errors, answers.size());
    }

    /** Sends one message per worker of the instance (its worker event id: {@code eventId/workerId}), in parallel. */
    private List<Answer> ask(String eventId, String instanceId, Function<String, ControlMsg> message) {
        List<WorkerInfo> workers = registry.workersOf(instanceId);
        if (workers.isEmpty()) {
            throw new UnknownInstanceException(instanceId);
        }
        List<WorkerEvent> sent = new ArrayList<>();
        List<Future<Answer>> futures = new ArrayList<>();
        for (WorkerInfo w : workers) {
            String workerEventId = eventId + "/" + w.key().workerId();
            ControlMsg m = message.apply(workerEventId);
            sent.add(new WorkerEvent(w.replyAddress(), workerEventId, w.key().toString()));
            futures.add(parallel.submit(() -> answer(w, m)));
        }
        events.put(eventId, List.copyOf(sent));
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

    private Optional<ControlRetMsg> request(String address, ControlMsg m) {
        WorkerConnections.Reply r = connections.request(address, Wire.encode(m));
        if (r.payload().isEmpty()) {
            metrics.forwardFailed("timeout");
            return Optional.empty();
        }
        try {
            return Wire.decode(r.payload().get()) instanceof ControlRetMsg c ? Optional.of(c) : Optional.empty();
        } catch (MalformedMessageException e) {
            metrics.malformed(ControllerMetrics.Socket.WORKER_REQ);
            return Optional.empty();
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
    }
}
