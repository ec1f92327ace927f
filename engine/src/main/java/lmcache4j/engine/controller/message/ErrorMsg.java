package lmcache4j.engine.controller.message;

import java.util.Objects;

/**
 * LMCache's {@code ErrorMsg}: the answer to any request that could not be served (an unknown or
 * malformed request, an unsupported operation). One record answers every request group.
 *
 * @param error what went wrong, for a person to read
 */
public record ErrorMsg(String error) implements WorkerReqRetMsg, ControlRetMsg, OrchRetMsg {
    public ErrorMsg {
        Objects.requireNonNull(error, "error");
    }
}
