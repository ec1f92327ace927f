package lmcache4j.engine.key;

import java.util.List;

/**
 * The chunk hash function, named as LMCache's {@code pre_caching_hash_algorithm} names it.
 *
 * <p>Only vLLM's portable {@code sha256_cbor} exists here: SHA-256 over the canonical CBOR
 * encoding of {@code (parent hash, tuple(token ids), None)}. LMCache configured with
 * {@code sha256_cbor} (or its older name {@code sha256_cbor_64bit}, an alias since vLLM's rename)
 * and the same {@code PYTHONHASHSEED} computes the same chunk hashes, so keys interoperate.
 * LMCache's default, {@code builtin}, is CPython's {@code hash()} of the tuple; it cannot be
 * reproduced outside CPython and is refused by {@link #fromName}.
 */
public enum HashAlgorithm {
    /** vLLM's {@code sha256_cbor}: 32-byte digests, portable across processes and languages. */
    SHA256_CBOR("sha256_cbor", List.of("sha256_cbor_64bit"));

    private final String lmcacheName;
    private final List<String> aliases;

    HashAlgorithm(String lmcacheName, List<String> aliases) {
        this.lmcacheName = lmcacheName;
        this.aliases = aliases;
    }

    /** lmcache4j's default: {@link #SHA256_CBOR}. */
    public static HashAlgorithm defaultAlgorithm() {
        return SHA256_CBOR;
    }

    /** The name in LMCache's {@code pre_caching_hash_algorithm} setting. */
    public String lmcacheName() {
        return lmcacheName;
    }

    /** Other names LMCache accepts for the same function. */
    public List<String> aliases() {
        return aliases;
    }

    /**
     * The algorithm LMCache calls {@code name}.
     *
     * @throws IllegalArgumentException for {@code builtin} (not reproducible, with the way out) and
     *                                  for unknown names (with the valid ones)
     */
    public static HashAlgorithm fromName(String name) {
        for (HashAlgorithm a : values()) {
            if (a.lmcacheName.equals(name) || a.aliases.contains(name)) {
                return a;
            }
        }
        if ("builtin".equals(name)) {
            throw new IllegalArgumentException("pre_caching_hash_algorithm 'builtin' is CPython's hash() of a tuple, "
                    + "which only CPython with the same PYTHONHASHSEED reproduces; lmcache4j cannot. Use 'sha256_cbor' "
                    + "(vLLM's portable hash) here and in LMCache/vLLM, with the same PYTHONHASHSEED, to share keys");
        }
        throw new IllegalArgumentException("unknown pre_caching_hash_algorithm '" + name + "'; valid: " + validNames());
    }

    private static String validNames() {
        StringBuilder sb = new StringBuilder();
        for (HashAlgorithm a : values()) {
            sb.append(sb.isEmpty() ? "" : ", ").append(a.lmcacheName);
            for (String alias : a.aliases) {
                sb.append(", ").append(alias).append(" (alias of ").append(a.lmcacheName).append(')');
            }
        }
        return sb.toString();
    }
}
