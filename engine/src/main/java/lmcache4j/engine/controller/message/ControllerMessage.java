package lmcache4j.engine.controller.message;

/**
 * One message of LMCache's cache-controller protocol ({@code lmcache/v1/cache_controller/message.py}).
 * The sub-interfaces follow LMCache's groups, which say who sends the message over which socket:
 * <ul>
 *   <li>{@link WorkerMsg}: worker to controller, PUSH/PULL, no reply;</li>
 *   <li>{@link WorkerReqMsg} / {@link WorkerReqRetMsg}: worker to controller over DEALER/ROUTER and the reply;</li>
 *   <li>{@link ControlMsg} / {@link ControlRetMsg}: controller to a worker's REP socket and the reply;</li>
 *   <li>{@link OrchMsg} / {@link OrchRetMsg}: an orchestrator to the controller and the reply.</li>
 * </ul>
 * Every record is named like its LMCache class and {@link ControllerCodec} writes it the way
 * msgspec does. {@link ErrorMsg} answers any request that failed.
 */
public sealed interface ControllerMessage
        permits WorkerMsg, WorkerReqMsg, WorkerReqRetMsg, ControlMsg, ControlRetMsg, OrchMsg, OrchRetMsg {
}
