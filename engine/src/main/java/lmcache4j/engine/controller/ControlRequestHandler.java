package lmcache4j.engine.controller;

import java.util.Map;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongFunction;

import lmcache4j.engine.controller.message.ControlMsg;
import lmcache4j.engine.controller.message.ControlRetMsg;
import lmcache4j.engine.controller.message.ControllerMessage;
import lmcache4j.engine.controller.message.ErrorMsg;
import lmcache4j.engine.storage.cpu.LocalCpuBackend;
import lmcache4j.engine.storage.disk.LocalDiskBackend;

/**
 * Answers the controller's control messages (what arrives on a worker's REP socket) against the
 * engine: clear a tier, pin a prefix, report health, move (prefetch) disk to CPU, and say whether
 * a move has finished. Anything else gets an {@link ErrorMsg}. Never throws.
 */
final class ControlRequestHandler {
    /** {@code CheckFinishWorkerRetMsg} statuses. */
    static final String FINISHED = "finished";
    static final String RUNNING = "running";
    static final String UNKNOWN_EVENT = "unknown_event";
    /** Moves remembered for check-finish at most (oldest forgotten first). */
    private static final int MAX_TRACKED_EVENTS = 1024;

    private final WorkerControls engine;
    private final Map<String, CompletableFuture<Integer>> moves = new ConcurrentHashMap<>();

    ControlRequestHandler(WorkerControls engine) {
        this.engine = engine;
    }

    ControllerMessage answer(ControllerMessage request) {
        try {
            return switch (request) {
                case ControlMsg.ClearWorkerMsg m -> tokens(engine.clear(m.location()), m.location(),
                        ControlRetMsg.ClearWorkerRetMsg::new);
                case ControlMsg.PinWorkerMsg m -> tokens(engine.pin(m.location(), m.tokens()), m.location(),
                        ControlRetMsg.PinWorkerRetMsg::new);
                case ControlMsg.HealthWorkerMsg m -> new ControlRetMsg.HealthWorkerRetMsg(engine.health());
                case ControlMsg.MoveWorkerMsg m -> move(m);
                case ControlMsg.CheckFinishWorkerMsg m -> new ControlRetMsg.CheckFinishWorkerRetMsg(status(m.workerEventId()));
                case ControlMsg.CompressWorkerMsg m -> new ErrorMsg("compression is not supported by lmcache4j");
                case ControlMsg.DecompressWorkerMsg m -> new ErrorMsg("compression is not supported by lmcache4j");
                default -> new ErrorMsg(request.getClass().getSimpleName()
                        + " is not a control message a worker answers");
            };
        } catch (RuntimeException e) {
            return new ErrorMsg(request.getClass().getSimpleName() + " failed: " + e.getMessage());
        }
    }

    private ControllerMessage tokens(OptionalLong tokens, String location,
                                     LongFunction<ControllerMessage> reply) {
        if (tokens.isEmpty()) {
            return new ErrorMsg("no tier named '" + location + "'; this worker has " + engine.tierNames());
        }
        return reply.apply(tokens.getAsLong());
    }

    /** LMCache's move, in the one direction lmcache4j has: a prefetch of disk chunks into the CPU tier. */
    private ControllerMessage move(ControlMsg.MoveWorkerMsg m) {
        if (!m.oldPosition().equals(LocalDiskBackend.NAME) || !m.newPosition().location().equals(LocalCpuBackend.NAME)) {
            return new ErrorMsg("lmcache4j moves only " + LocalDiskBackend.NAME + " -> " + LocalCpuBackend.NAME
                    + " (a prefetch), not " + m.oldPosition() + " -> " + m.newPosition().location());
        }
        if (m.tokens().isEmpty()) {
            return new ErrorMsg("a move needs the tokens of the prefix to move");
        }
        int[] tokens = m.tokens().get();
        if (moves.size() >= MAX_TRACKED_EVENTS) {
            moves.entrySet().removeIf(e -> e.getValue().isDone());
        }
        moves.put(m.workerEventId(), engine.prefetchToCpu(tokens));
        return new ControlRetMsg.MoveWorkerRetMsg(tokens.length);
    }

    private String status(String eventId) {
        CompletableFuture<Integer> move = moves.get(eventId);
        if (move == null) {
            return UNKNOWN_EVENT;
        }
        return move.isDone() ? FINISHED : RUNNING;
    }
}
