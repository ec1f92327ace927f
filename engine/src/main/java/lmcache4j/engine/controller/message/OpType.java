package lmcache4j.engine.controller.message;

/** LMCache's {@code OpType}: what happened to a chunk; on the wire, the enum's value string. */
public enum OpType {
    /** The chunk entered a tier ({@code "admit"}). */
    ADMIT("admit"),
    /** The chunk left a tier ({@code "evict"}). */
    EVICT("evict");

    private final String wireValue;

    OpType(String wireValue) {
        this.wireValue = wireValue;
    }

    /** The string msgspec writes for this value. */
    public String wireValue() {
        return wireValue;
    }
}
