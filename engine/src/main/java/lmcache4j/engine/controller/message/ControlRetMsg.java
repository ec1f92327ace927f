package lmcache4j.engine.controller.message;

import java.util.Objects;

/** LMCache's {@code ControlRetMsg} group: a worker's answers to {@link ControlMsg}s. */
public sealed interface ControlRetMsg extends ControllerMessage permits ErrorMsg,
        ControlRetMsg.ClearWorkerRetMsg, ControlRetMsg.PinWorkerRetMsg, ControlRetMsg.CompressWorkerRetMsg,
        ControlRetMsg.DecompressWorkerRetMsg, ControlRetMsg.MoveWorkerRetMsg, ControlRetMsg.HealthWorkerRetMsg,
        ControlRetMsg.CheckFinishWorkerRetMsg {

    /** {@code ClearWorkerRetMsg}. @param numTokens how many tokens' chunks were dropped */
    record ClearWorkerRetMsg(long numTokens) implements ControlRetMsg {
    }

    /** {@code PinWorkerRetMsg}. @param numTokens how many tokens' chunks were pinned */
    record PinWorkerRetMsg(long numTokens) implements ControlRetMsg {
    }

    /** {@code CompressWorkerRetMsg}. @param numTokens how many tokens were compressed */
    record CompressWorkerRetMsg(long numTokens) implements ControlRetMsg {
    }

    /** {@code DecompressWorkerRetMsg}. @param numTokens how many tokens were decompressed */
    record DecompressWorkerRetMsg(long numTokens) implements ControlRetMsg {
    }

    /** {@code MoveWorkerRetMsg}. @param numTokens how many tokens' chunks are being moved */
    record MoveWorkerRetMsg(long numTokens) implements ControlRetMsg {
    }

    /** {@code HealthWorkerRetMsg}. @param errorCode 0 when healthy */
    record HealthWorkerRetMsg(int errorCode) implements ControlRetMsg {
    }

    /** {@code CheckFinishWorkerRetMsg}. @param status for example {@code "finished"} */
    record CheckFinishWorkerRetMsg(String status) implements ControlRetMsg {
        public CheckFinishWorkerRetMsg {
            Objects.requireNonNull(status, "status");
        }
    }
}
