package lmcache4j.allocator;

import java.util.Optional;

/**
 * Element types of KV tensors, with LMCache's names and integer codes so that keys and stored
 * metadata stay interchangeable with LMCache.
 *
 * <p>{@link #keyName()} is the dtype string of a cache key ({@code half}, {@code bfloat16},
 * {@code float}, ...). {@link #metadataCode()} is the code in the 28-byte remote metadata header:
 * 0 means "no dtype" (byte buffers), 1 and 2 both mean fp16 and LMCache always writes 2. Types
 * LMCache's header cannot express have no code and cannot be written to a remote tier.
 */
public enum DType {
    FLOAT16("half", "float16", 2, 2),
    BFLOAT16("bfloat16", "bfloat16", 3, 2),
    FLOAT32("float", "float32", 4, 4),
    FLOAT64("double", "float64", 5, 8),
    UINT8("uint8", "uint8", 6, 1),
    FLOAT8_E4M3FN("fp8_e4m3fn", "float8_e4m3fn", 7, 1),
    FLOAT8_E5M2("fp8_e5m2", "float8_e5m2", 8, 1),
    FLOAT8_E4M3FNUZ("fp8_e4m3fnuz", "float8_e4m3fnuz", -1, 1),
    FLOAT8_E5M2FNUZ("fp8_e5m2fnuz", "float8_e5m2fnuz", -1, 1),
    INT8("int8", "int8", -1, 1),
    INT16("int16", "int16", -1, 2),
    INT32("int32", "int32", -1, 4),
    INT64("int64", "int64", -1, 8),
    BOOL("bool", "bool", -1, 1); // -1: LMCache's header has no code for the types from FLOAT8_E4M3FNUZ on

    /** The remote-metadata code for "no dtype", used by byte-buffer objects. */
    public static final int METADATA_CODE_NONE = 0;

    private final String keyName;
    private final String torchName;
    private final int metadataCode;
    private final int byteSize;

    DType(String keyName, String torchName, int metadataCode, int byteSize) {
        this.keyName = keyName;
        this.torchName = torchName;
        this.metadataCode = metadataCode;
        this.byteSize = byteSize;
    }

    /** The name in a cache key string, for example {@code half} for fp16. */
    public String keyName() {
        return keyName;
    }

    /** PyTorch's name without the {@code torch.} prefix, for example {@code float16}. */
    public String torchName() {
        return torchName;
    }

    /** Bytes per element. */
    public int byteSize() {
        return byteSize;
    }

    /** Whether LMCache's remote metadata header can carry this type. */
    public boolean hasMetadataCode() {
        return metadataCode > 0;
    }

    /**
     * The code in LMCache's remote metadata header.
     *
     * @throws IllegalStateException for a type LMCache's header has no code for
     */
    public int metadataCode() {
        if (metadataCode <= 0) {
            throw new IllegalStateException("LMCache's remote metadata has no dtype code for " + torchName
                    + "; representable types: float16, bfloat16, float32, float64, uint8, float8_e4m3fn, float8_e5m2");
        }
        return metadataCode;
    }

    /** The type with this key name ({@code half}, {@code bfloat16}, ...). */
    public static DType fromKeyName(String name) {
        for (DType t : values()) {
            if (t.keyName.equals(name)) {
                return t;
            }
        }
        throw new IllegalArgumentException("unknown dtype '" + name + "' in a cache key; valid: " + validKeyNames());
    }

    /** The type with this PyTorch name, with or without the {@code torch.} prefix; {@code half} is fp16. */
    public static DType fromTorchName(String name) {
        String bare = name.startsWith("torch.") ? name.substring("torch.".length()) : name;
        if (bare.equals("half")) {
            return FLOAT16;
        }
        for (DType t : values()) {
            if (t.torchName.equals(bare)) {
                return t;
            }
        }
        throw new IllegalArgumentException("unknown torch dtype '" + name + "'");
    }

    /**
     * The type a remote metadata code stands for: empty for code 0 (no dtype), fp16 for 1 and 2.
     *
     * @throws IllegalArgumentException for a code outside 0..8
     */
    public static Optional<DType> fromMetadataCode(int code) {
        if (code < 0) { // types without a code are stored as -1: never match them
            throw new IllegalArgumentException("unknown dtype code " + code + " in remote metadata; valid: 0-8");
        }
        if (code == METADATA_CODE_NONE) {
            return Optional.empty();
        }
        if (code == 1) {
            return Optional.of(FLOAT16);
        }
        for (DType t : values()) {
            if (t.metadataCode == code) {
                return Optional.of(t);
            }
        }
        throw new IllegalArgumentException("unknown dtype code " + code + " in remote metadata; valid: 0-8");
    }

    private static String validKeyNames() {
        StringBuilder sb = new StringBuilder();
        for (DType t : values()) {
            sb.append(sb.isEmpty() ? "" : ", ").append(t.keyName);
        }
        return sb.toString();
    }
}
