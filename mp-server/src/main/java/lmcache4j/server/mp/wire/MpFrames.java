package lmcache4j.server.mp.wire;

import java.util.List;

/**
 * Turns a ROUTER message into an {@link MpRequest} and a result into the reply message
 * (docs/design/mp-server.md §2). Parsing checks only the framing: the frame count, the op frame
 * and, for a served operation, the number of argument frames; the arguments themselves are decoded
 * by the operation's handler. A refused operation (CUDA IPC, blend, P2P…) parses, so that the
 * server can log why it refuses it, but its arguments are never looked at.
 */
public final class MpFrames {
    private MpFrames() {
    }

    /**
     * Parses {@code [identity, uid, op, arg…]}.
     *
     * @throws MpProtocolException {@link MpDropReason#SHORT_MESSAGE} for fewer than three frames;
     *     {@link MpDropReason#BAD_OP} or {@link MpDropReason#UNKNOWN_OP} for the op frame;
     *     {@link MpDropReason#ARITY} for a served operation with an argument count it does not take
     */
    public static MpRequest parse(List<byte[]> frames) throws MpProtocolException {
        if (frames.size() < 3) {
            throw new MpProtocolException(MpDropReason.SHORT_MESSAGE,
                    frames.size() + " frames (expected at least 3: identity, uid, op)");
        }
        MpOperation operation = MpOperation.decode(frames.get(2));
        List<byte[]> args = frames.subList(3, frames.size());
        if (operation.served() && !operation.acceptsArity(args.size())) {
            throw new MpProtocolException(MpDropReason.ARITY, operation.wireName() + " with " + args.size()
                    + " argument frames (expected " + arity(operation) + ")");
        }
        return new MpRequest(frames.get(0), frames.get(1), frames.get(2), operation, args);
    }

    private static String arity(MpOperation operation) {
        return operation.minArgs() == operation.maxArgs() ? Integer.toString(operation.minArgs())
                : operation.minArgs() + " or " + operation.maxArgs();
    }

    /** The reply carrying a result: {@code [identity, uid, op, result]}, uid and op echoed as received. */
    public static List<byte[]> reply(MpRequest request, byte[] result) {
        return List.of(request.identity(), request.uidFrame(), request.opFrame(), result);
    }

    /** The reply of an operation whose result is {@code None}: no result frame (§2). */
    public static List<byte[]> replyWithoutResult(MpRequest request) {
        return List.of(request.identity(), request.uidFrame(), request.opFrame());
    }
}
