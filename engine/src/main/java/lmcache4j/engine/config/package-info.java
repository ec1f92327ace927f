/**
 * lmcache4j's configuration: one typed, immutable {@link lmcache4j.engine.config.LMCacheEngineConfig}
 * with LMCache's field names and defaults, loaded by {@link lmcache4j.engine.config.ConfigLoader}.
 *
 * <h2>Sources and precedence</h2>
 * As LMCache (reference spec §6.8), lowest first: the field table's defaults; a YAML file (passed
 * in, or named by {@code LMCACHE_CONFIG_FILE}); {@code LMCACHE_<FIELD>} environment variables; code
 * overrides. A value set by a higher source replaces the lower one whole ({@code extra_config}
 * included: maps are not merged, as in LMCache). Rules applied last may derive values
 * ({@code enable_blending} forces {@code save_unfull_chunk}); {@link
 * lmcache4j.engine.config.LMCacheEngineConfig#source(String)} says where each value came from.
 *
 * <h2>Conversions</h2>
 * LMCache's: environment text has surrounding quotes stripped (Python string-literal escapes
 * resolved); lists are comma-separated; {@code extra_config} is a JSON object; {@code local_disk}
 * loses a {@code file://} prefix; sizes are GB as floating-point numbers. In YAML, lists and
 * mappings are native, and string values are converted as environment text is. For a nullable
 * field, empty text or YAML {@code null} means unset.
 *
 * <h2>Where lmcache4j is stricter than LMCache, and why</h2>
 * <ul>
 *   <li>Booleans accept only {@code true/false/1/0} (any case). LMCache reads every other word as
 *       false, so {@code LMCACHE_LOCAL_CPU=yes} would silently disable the CPU tier.
 *   <li>Bad values are errors naming the key, the value, its source and what is valid. LMCache
 *       logs a warning and falls back to the default, which hides typos until much later.
 *   <li>Unknown keys in the YAML file or in code are errors listing the valid keys (with the closest
 *       match). Unknown {@code LMCACHE_*} environment variables only warn: the environment is shared
 *       with other tools, and a few non-field variables are known and left alone
 *       ({@code LMCACHE_CONFIG_FILE}, {@code LMCACHE_CUDART}, {@code LMCACHE_LOG_LEVEL}, ...).
 *   <li>LMCache keys lmcache4j does not implement (LMCache's P2P channels and later PD options, NIXL, GDS, plugins, ...)
 *       are errors saying "not supported by lmcache4j" in every source, since whoever set them
 *       expects a feature that is not there.
 *   <li>LMCache's deprecated key names are accepted with a warning and read as the new name;
 *       giving both in one source is an error naming both.
 *   <li>{@code pre_caching_hash_algorithm}: LMCache's default {@code builtin} (Python's
 *       {@code hash()}) cannot be reproduced on the JVM, so lmcache4j defaults to
 *       {@code sha256_cbor} and refuses {@code builtin} with the reason.
 * </ul>
 */
package lmcache4j.engine.config;
