package lmcache4j.engine.key;

import java.util.Locale;

/**
 * Which hash a chunk's storage key carries: the setting {@code storage_chunk_keys}. Every tier that
 * names objects by key (the disk tier's files, Redis, {@code fs://}, {@code lm://}, S3) uses the
 * key string, so two processes share a store only when they use the same form.
 */
public enum StorageKeys {
    /**
     * LMCache's current form (its token database since it folds hashes to ints, LMCache PR #2999):
     * {@code k_i = first 8 bytes, big-endian, of sha256_cbor((k_{i-1}, tuple(chunk_i), ()))} from
     * {@code k_0} = the seed's {@code NONE_HASH} folded the same way, written in the key as
     * lowercase hex without padding. The default.
     */
    LMCACHE("lmcache"),
    /**
     * The older form: vLLM's 32-byte {@code sha256_cbor} digest chain, written as 64 hex digits
     * (LMCache before PR #2999, and lmcache4j's stores written before this setting existed).
     */
    DIGEST("digest");

    private final String configName;

    StorageKeys(String configName) {
        this.configName = configName;
    }

    /** Its name in {@code storage_chunk_keys}. */
    public String configName() {
        return configName;
    }

    /** The default: LMCache's current form. */
    public static StorageKeys defaultForm() {
        return LMCACHE;
    }

    /**
     * The form {@code name} names.
     *
     * @throws IllegalArgumentException naming the valid ones
     */
    public static StorageKeys fromName(String name) {
        for (StorageKeys k : values()) {
            if (k.configName.equals(name.toLowerCase(Locale.ROOT))) {
                return k;
            }
        }
        throw new IllegalArgumentException("unknown storage_chunk_keys '" + name + "'; valid: lmcache (LMCache's "
                + "current integer keys, the default), digest (the 64-hex-digit SHA-256 keys of stores written before)");
    }
}
