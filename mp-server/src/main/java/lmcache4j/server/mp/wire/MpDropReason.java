package lmcache4j.server.mp.wire;

/**
 * Why an MP request was dropped without a reply. LMCache's multiprocess protocol has no error
 * reply (docs/design/mp-server.md §2), so a refused request can only be logged and counted; each
 * constant's {@link #label()} is the {@code reason} label of {@code lmcache4j_mp_dropped_total}, a
 * fixed set so that a hostile peer cannot grow the metric's label space.
 */
public enum MpDropReason {
    /** Fewer than the three frames {@code [identity, uid, op]} a ROUTER request always has. */
    SHORT_MESSAGE("short_message"),
    /** The op frame is not one msgpack int or str (truncated, another type, trailing bytes). */
    BAD_OP("bad_op"),
    /** The op is an int outside the frozen table or a name no operation has. */
    UNKNOWN_OP("unknown_op"),
    /** The op is known but lmcache4j refuses it (CUDA IPC, blend, P2P, experimental, KV events). */
    REFUSED_OP("refused_op"),
    /** The number of argument frames is not one the operation accepts. */
    ARITY("arity"),
    /** An argument frame is malformed msgpack, has the wrong type, or breaks a limit or invariant. */
    BAD_ARGUMENT("bad_argument");

    private final String label;

    MpDropReason(String label) {
        this.label = label;
    }

    /** The metric label: snake_case, stable across releases. */
    public String label() {
        return label;
    }
}
