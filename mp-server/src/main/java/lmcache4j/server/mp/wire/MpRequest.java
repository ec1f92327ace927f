package lmcache4j.server.mp.wire;

import java.util.List;
import java.util.Objects;

/**
 * One request as a ROUTER socket receives it from LMCache's DEALER client:
 * {@code [identity, uid, op, arg…]} (docs/design/mp-server.md §2). The uid and op frames are kept
 * as received, because the reply must echo them byte for byte; the argument frames are kept
 * undecoded, one msgpack value each, for the operation's handler to read with the codecs.
 * The arrays are not copied; nobody may change them.
 *
 * @param identity the ROUTER's routing identity of the client
 * @param uidFrame the request uid frame (a msgpack int the client matches replies by)
 * @param opFrame the op frame (a msgpack int from the frozen table, or a str name)
 * @param operation what {@code opFrame} names
 * @param args the argument frames, in the operation's declaration order
 */
public record MpRequest(byte[] identity, byte[] uidFrame, byte[] opFrame, MpOperation operation, List<byte[]> args) {

    /** Refuses nulls and freezes the argument list. */
    public MpRequest {
        Objects.requireNonNull(identity, "identity");
        Objects.requireNonNull(uidFrame, "uidFrame");
        Objects.requireNonNull(opFrame, "opFrame");
        Objects.requireNonNull(operation, "operation");
        args = List.copyOf(args);
    }

    /** The argument frame at {@code index} (the arity was checked when the request was parsed). */
    public byte[] arg(int index) {
        return args.get(index);
    }
}
