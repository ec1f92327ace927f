package lmcache4j.engine.config;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import lmcache4j.engine.config.internal.ConfigField;
import lmcache4j.engine.config.internal.ConfigSchema;
import lmcache4j.engine.config.internal.FieldKind;
import lmcache4j.engine.json.Json;

/**
 * The engine's effective configuration: immutable, typed, with LMCache's field names (getters are
 * the Java-style names: {@code chunk_size} → {@link #chunkSize()}) and where each value came from
 * ({@link #source(String)}). Built by {@link ConfigLoader}; the fields are listed in
 * {@link ConfigSchema#lmcache4j()}.
 *
 * <p>Sizes are in GB as in LMCache ({@code ...Gb()}), with byte conversions ({@code ...Bytes()},
 * GB = 1024^3 bytes, truncated as LMCache's {@code int(gb * 1024**3)}). Unset nullable fields are
 * {@link Optional#empty()}. Two configs are equal when their values are, whatever the sources.
 */
public final class LMCacheEngineConfig {
    private static final double BYTES_PER_GB = 1024.0 * 1024.0 * 1024.0;

    private final ConfigSchema schema;
    private final Map<String, Object> values;
    private final Map<String, ConfigSource> sources;
    private final List<String> warnings;

    LMCacheEngineConfig(ConfigSchema schema, Map<String, Object> values, Map<String, ConfigSource> sources,
            List<String> warnings) {
        this.schema = schema;
        this.values = values;
        this.sources = sources;
        this.warnings = List.copyOf(warnings);
    }

    /** LMCache's defaults with nothing read from file or environment. */
    public static LMCacheEngineConfig defaults() {
        return ConfigLoader.builder().environment(Map.of()).build();
    }

    // --- core ---------------------------------------------------------------------------------

    /** {@code chunk_size}: tokens per chunk (default 256). */
    public int chunkSize() {
        return (Integer) values.get("chunk_size");
    }

    /** {@code local_cpu}: whether the CPU tier retains chunks (default true). */
    public boolean localCpu() {
        return bool("local_cpu");
    }

    /** {@code max_local_cpu_size} in GB (default 5.0). */
    public double maxLocalCpuSizeGb() {
        return dbl("max_local_cpu_size");
    }

    /** {@code max_local_cpu_size} in bytes. */
    public long maxLocalCpuSizeBytes() {
        return bytes("max_local_cpu_size");
    }

    /** {@code local_cpu_use_hugepages} (default false). */
    public boolean localCpuUseHugepages() {
        return bool("local_cpu_use_hugepages");
    }

    /** {@code reserve_local_cpu_size} in GB (default 0.0). */
    public double reserveLocalCpuSizeGb() {
        return dbl("reserve_local_cpu_size");
    }

    /** {@code reserve_local_cpu_size} in bytes. */
    public long reserveLocalCpuSizeBytes() {
        return bytes("reserve_local_cpu_size");
    }

    /** {@code local_disk} with {@code file://} stripped (comma-separated when several); empty: no disk tier. */
    public Optional<String> localDisk() {
        return str("local_disk");
    }

    /** The {@code local_disk} directories, in order; empty when there is no disk tier. */
    public List<Path> localDiskPaths() {
        return localDisk().map(s -> Arrays.stream(s.split(",")).map(Path::of).toList()).orElse(List.of());
    }

    /** {@code local_disk_path_sharding} (default "by_gpu"). */
    public String localDiskPathSharding() {
        return (String) values.get("local_disk_path_sharding");
    }

    /** {@code max_local_disk_size} in GB (default 0.0). */
    public double maxLocalDiskSizeGb() {
        return dbl("max_local_disk_size");
    }

    /** {@code max_local_disk_size} in bytes. */
    public long maxLocalDiskSizeBytes() {
        return bytes("max_local_disk_size");
    }

    /** {@code enable_p2p}. */
    public boolean enableP2p() {
        return (Boolean) values.get("enable_p2p");
    }

    /** {@code p2p_host}. */
    public Optional<String> p2pHost() {
        return str("p2p_host");
    }

    /** {@code p2p_init_ports}. */
    public Optional<List<Integer>> p2pInitPorts() {
        return list("p2p_init_ports");
    }

    /** {@code p2p_lookup_ports}: accepted for LMCache configs, unused (lmcache4j locates peers through the controller). */
    public Optional<List<Integer>> p2pLookupPorts() {
        return list("p2p_lookup_ports");
    }

    /** Peer-to-peer sharing's settings, when {@code enable_p2p}; throws when enabled but incomplete. */
    public Optional<P2pSettings> p2p() {
        return P2pSettings.from(this);
    }

    /** {@code enable_pd}: disaggregated prefill (default false). */
    public boolean enablePd() {
        return bool("enable_pd");
    }

    /** {@code pd_role}: {@code sender} or {@code receiver}. */
    public Optional<String> pdRole() {
        return str("pd_role");
    }

    /** {@code pd_buffer_size} in bytes. */
    public Optional<Long> pdBufferSize() {
        return Optional.ofNullable((Double) values.get("pd_buffer_size")).map(Double::longValue);
    }

    /** {@code pd_buffer_device}: {@code cpu}. */
    public Optional<String> pdBufferDevice() {
        return str("pd_buffer_device");
    }

    /** {@code pd_peer_host}: where a receiver's PD ports bind. */
    public Optional<String> pdPeerHost() {
        return str("pd_peer_host");
    }

    /** {@code pd_peer_init_port}: a receiver's transfer port per worker. */
    public Optional<List<Integer>> pdPeerInitPort() {
        return list("pd_peer_init_port");
    }

    /** {@code pd_peer_alloc_port}: a receiver's allocation port per worker. */
    public Optional<List<Integer>> pdPeerAllocPort() {
        return list("pd_peer_alloc_port");
    }

    /** {@code pd_proxy_host}: where a sender tells the proxy a request is ready. */
    public Optional<String> pdProxyHost() {
        return str("pd_proxy_host");
    }

    /** {@code pd_proxy_port}. */
    public Optional<Integer> pdProxyPort() {
        return Optional.ofNullable((Integer) values.get("pd_proxy_port"));
    }

    /** {@code transfer_channel}: {@code tcp} or unset (the same). */
    public Optional<String> transferChannel() {
        return str("transfer_channel");
    }

    /** Disaggregated prefill's settings, when {@code enable_pd}; throws when enabled but incomplete. */
    public Optional<PdSettings> pd() {
        return PdSettings.from(this);
    }

    /** {@code remote_url}; empty: no remote tier. */
    public Optional<String> remoteUrl() {
        return str("remote_url");
    }

    /** {@code remote_serde}: naive (default), lz4 or zstd. */
    public String remoteSerde() {
        return (String) values.get("remote_serde");
    }

    /** {@code use_layerwise} (default false). */
    public boolean useLayerwise() {
        return bool("use_layerwise");
    }

    /** {@code save_decode_cache} (default false). */
    public boolean saveDecodeCache() {
        return bool("save_decode_cache");
    }

    /** {@code pre_caching_hash_algorithm}: always "sha256_cbor" today (the only portable choice). */
    public String preCachingHashAlgorithm() {
        return (String) values.get("pre_caching_hash_algorithm");
    }

    /** {@code save_unfull_chunk} (default false; forced true by {@code enable_blending}). */
    public boolean saveUnfullChunk() {
        return bool("save_unfull_chunk");
    }

    /** {@code blocking_timeout_secs} (default 10). */
    public int blockingTimeoutSecs() {
        return (Integer) values.get("blocking_timeout_secs");
    }

    /** {@code cache_policy}, upper case: LRU (default), LFU, FIFO, MRU, S3FIFO, ARC or KV_ADAPTIVE. */
    public String cachePolicy() {
        return (String) values.get("cache_policy");
    }

    /** {@code numa_mode}: "auto" or "manual"; empty: no NUMA binding. */
    public Optional<String> numaMode() {
        return str("numa_mode");
    }

    /** {@code enable_async_loading} (default false). */
    public boolean enableAsyncLoading() {
        return bool("enable_async_loading");
    }

    /**
     * {@code extra_config}: unmodifiable, JSON-typed (String, Long, Double, Boolean, List, Map; no
     * nulls); empty when unset.
     */
    @SuppressWarnings("unchecked")
    public Map<String, Object> extraConfig() {
        return (Map<String, Object>) values.get("extra_config");
    }

    /** {@code hash_seed} (lmcache4j only), else {@code PYTHONHASHSEED}; empty: random NONE_HASH. */
    public Optional<String> hashSeed() {
        return str("hash_seed");
    }

    /** {@code copy_threads} (lmcache4j only): host copy threads per chunk; empty: sized from the machine. */
    public Optional<Integer> copyThreads() {
        return Optional.ofNullable((Integer) values.get("copy_threads"));
    }

    /** {@code copy_streaming_stores} (lmcache4j only, default true): host copies use streaming stores where offered. */
    public boolean copyStreamingStores() {
        return bool("copy_streaming_stores");
    }

    /**
     * {@code controller_chunk_keys} (lmcache4j only, default {@code lmcache}): how a chunk becomes a
     * control-plane key ({@code lmcache4j.engine.controller.ControllerKeys.Scheme} by that name).
     */
    public String controllerChunkKeys() {
        return str("controller_chunk_keys").orElse("lmcache");
    }

    /**
     * {@code storage_chunk_keys} (lmcache4j only, default {@code lmcache}): the hash form of the
     * chunks' storage keys ({@code lmcache4j.engine.key.StorageKeys} by that name).
     */
    public String storageChunkKeys() {
        return str("storage_chunk_keys").orElse("lmcache");
    }

    // --- KV events ----------------------------------------------------------------------------

    /** {@code kv_events_endpoint} (lmcache4j only): where KV events are published; empty: none. */
    public Optional<String> kvEventsEndpoint() {
        return str("kv_events_endpoint");
    }

    /** {@code kv_events_replay_endpoint} (lmcache4j only): the replay ROUTER address; empty: no replay. */
    public Optional<String> kvEventsReplayEndpoint() {
        return str("kv_events_replay_endpoint");
    }

    /** {@code kv_events_topic} (lmcache4j only, default empty). */
    public String kvEventsTopic() {
        return str("kv_events_topic").orElse("");
    }

    /** {@code kv_events_buffer_steps} (lmcache4j only, default 10000). */
    public int kvEventsBufferSteps() {
        return (Integer) values.get("kv_events_buffer_steps");
    }

    /** {@code kv_events_hwm} (lmcache4j only, default 100000). */
    public int kvEventsHwm() {
        return (Integer) values.get("kv_events_hwm");
    }

    /** {@code kv_events_max_queue_size} (lmcache4j only, default 100000). */
    public int kvEventsMaxQueueSize() {
        return (Integer) values.get("kv_events_max_queue_size");
    }

    // --- blending -----------------------------------------------------------------------------

    /** {@code enable_blending} (default false). */
    public boolean enableBlending() {
        return bool("enable_blending");
    }

    /** {@code blend_recompute_ratios}. */
    public Optional<List<Double>> blendRecomputeRatios() {
        return list("blend_recompute_ratios");
    }

    /** {@code blend_thresholds}. */
    public Optional<List<Double>> blendThresholds() {
        return list("blend_thresholds");
    }

    /** {@code blend_check_layers}. */
    public Optional<List<Integer>> blendCheckLayers() {
        return list("blend_check_layers");
    }

    /** {@code blend_min_tokens} (default 256). */
    public int blendMinTokens() {
        return (Integer) values.get("blend_min_tokens");
    }

    /** {@code blend_special_str} (default " # # "). */
    public String blendSpecialStr() {
        return (String) values.get("blend_special_str");
    }

    // --- placement ----------------------------------------------------------------------------

    /** {@code retrieve_locations}; empty: every backend. */
    public Optional<List<String>> retrieveLocations() {
        return list("retrieve_locations");
    }

    /** {@code store_location}; empty: every backend. */
    public Optional<String> storeLocation() {
        return str("store_location");
    }

    // --- lookup -------------------------------------------------------------------------------

    /** {@code lookup_server_worker_ids}; empty: every worker. */
    public Optional<List<Integer>> lookupServerWorkerIds() {
        return list("lookup_server_worker_ids");
    }

    /** {@code lookup_scheduler_url} (lmcache4j). */
    public Optional<String> lookupSchedulerUrl() {
        return str("lookup_scheduler_url");
    }

    /** {@code lookup_worker_urls} (lmcache4j), in rank order. */
    public Optional<List<String>> lookupWorkerUrls() {
        return list("lookup_worker_urls");
    }

    /** {@code lookup_timeout_ms} (default 3000). */
    public int lookupTimeoutMs() {
        return (Integer) values.get("lookup_timeout_ms");
    }

    /** {@code min_retrieve_tokens} (default 0). */
    public int minRetrieveTokens() {
        return (Integer) values.get("min_retrieve_tokens");
    }

    // --- lazy pool ----------------------------------------------------------------------------

    /** {@code enable_lazy_memory_allocator} (default false). */
    public boolean enableLazyMemoryAllocator() {
        return bool("enable_lazy_memory_allocator");
    }

    /** {@code lazy_memory_initial_ratio} (default 0.2). */
    public double lazyMemoryInitialRatio() {
        return dbl("lazy_memory_initial_ratio");
    }

    /** {@code lazy_memory_expand_trigger_ratio} (default 0.5). */
    public double lazyMemoryExpandTriggerRatio() {
        return dbl("lazy_memory_expand_trigger_ratio");
    }

    /** {@code lazy_memory_step_ratio} (default 0.1). */
    public double lazyMemoryStepRatio() {
        return dbl("lazy_memory_step_ratio");
    }

    /** {@code lazy_memory_safe_size} in GB (default 0.0). */
    public double lazyMemorySafeSizeGb() {
        return dbl("lazy_memory_safe_size");
    }

    // --- operations ---------------------------------------------------------------------------

    /** {@code max_pending_prefetches} (default 10,000; lmcache4j only). */
    public int maxPendingPrefetches() {
        return (Integer) values.get("max_pending_prefetches");
    }

    /** {@code pin_timeout_sec} (default 300). */
    public int pinTimeoutSec() {
        return (Integer) values.get("pin_timeout_sec");
    }

    /** {@code pin_check_interval_sec} (default 30). */
    public int pinCheckIntervalSec() {
        return (Integer) values.get("pin_check_interval_sec");
    }

    /** {@code internal_api_server_enabled} (default false). */
    public boolean internalApiServerEnabled() {
        return bool("internal_api_server_enabled");
    }

    /** {@code internal_api_server_host} (default "0.0.0.0"). */
    public String internalApiServerHost() {
        return (String) values.get("internal_api_server_host");
    }

    /** {@code internal_api_server_port_start} (default 6999). */
    public int internalApiServerPortStart() {
        return (Integer) values.get("internal_api_server_port_start");
    }

    /** {@code enable_controller} (default false). */
    public boolean enableController() {
        return bool("enable_controller");
    }

    /** {@code lmcache_instance_id} (default "lmcache_default_instance"). */
    public String lmcacheInstanceId() {
        return (String) values.get("lmcache_instance_id");
    }

    /** {@code controller_pull_url} (alias {@code controller_url}), if set. */
    public Optional<String> controllerPullUrl() {
        return str("controller_pull_url");
    }

    /** {@code controller_reply_url}, if set. */
    public Optional<String> controllerReplyUrl() {
        return str("controller_reply_url");
    }

    /** {@code lmcache_worker_ports}, if set. */
    public Optional<List<Integer>> lmcacheWorkerPorts() {
        return list("lmcache_worker_ports");
    }

    /** {@code lmcache_worker_heartbeat_delay_time} in seconds (default 10). */
    public double lmcacheWorkerHeartbeatDelayTime() {
        return dbl("lmcache_worker_heartbeat_delay_time");
    }

    /** {@code lmcache_worker_heartbeat_time} in seconds (default 10). */
    public double lmcacheWorkerHeartbeatTime() {
        return dbl("lmcache_worker_heartbeat_time");
    }

    /** {@code deployment_secret_file} (lmcache4j only): the deployment secret's file; empty: none. */
    public Optional<String> deploymentSecretFile() {
        return str("deployment_secret_file");
    }

    /** {@code controller_report_queue_size} (lmcache4j only, default 65536). */
    public int controllerReportQueueSize() {
        return (Integer) values.get("controller_report_queue_size");
    }

    // --- typed settings -----------------------------------------------------------------------

    /** The disk tier's settings, when {@code local_disk} and a positive {@code max_local_disk_size} are set. */
    public Optional<DiskTierSettings> diskTier() {
        return DiskTierSettings.from(this);
    }

    /** The remote tier's settings, when {@code remote_url} is set. */
    public Optional<RemoteTierSettings> remoteTier() {
        return RemoteTierSettings.from(this);
    }

    /** {@code extra_config.force_store_wait}: whether a store waits for memory instead of stopping (default false). */
    public boolean storeWaitsForMemory() {
        return ExtraConfigKeys.FORCE_STORE_WAIT.valueOrDefault(extraConfig());
    }

    /** {@code extra_config.gpu_to_numa_mapping} (GPU index → NUMA node), if set; checked when {@code numa_mode} is manual. */
    public Optional<Map<?, ?>> gpuToNumaMapping() {
        return ExtraConfigKeys.GPU_TO_NUMA_MAPPING.valueIn(extraConfig());
    }

    // --- extra_config accessors ---------------------------------------------------------------

    /** {@code extra_config[key]}, if present. */
    public Optional<Object> extra(String key) {
        return Optional.ofNullable(extraConfig().get(key));
    }

    /**
     * {@code extra_config[key]} as a boolean, or {@code fallback} when absent.
     *
     * @throws ConfigException if present but not a boolean
     */
    public boolean extraBoolean(String key, boolean fallback) {
        Object v = extraConfig().get(key);
        if (v == null) {
            return fallback;
        }
        if (v instanceof Boolean b) {
            return b;
        }
        throw extraTypeError(key, v, "a boolean");
    }

    /**
     * {@code extra_config[key]} as a number, or {@code fallback} when absent.
     *
     * @throws ConfigException if present but not a number
     */
    public double extraDouble(String key, double fallback) {
        Object v = extraConfig().get(key);
        if (v == null) {
            return fallback;
        }
        if (v instanceof Number n) {
            return n.doubleValue();
        }
        throw extraTypeError(key, v, "a number");
    }

    /**
     * {@code extra_config[key]} as a string, if present.
     *
     * @throws ConfigException if present but not a string
     */
    public Optional<String> extraString(String key) {
        Object v = extraConfig().get(key);
        if (v == null || v instanceof String) {
            return Optional.ofNullable((String) v);
        }
        throw extraTypeError(key, v, "a string");
    }

    private ConfigException extraTypeError(String key, Object v, String expected) {
        return new ConfigException("extra_config." + key + " = " + Json.write(v) + " (" + source("extra_config").describe()
                + ") is not valid: expected " + expected);
    }

    // --- generic access -----------------------------------------------------------------------

    /** The table this config was built over. */
    ConfigSchema schema() {
        return schema;
    }

    /**
     * The value of {@code field} by its LMCache name; empty when a nullable field is unset.
     *
     * @throws IllegalArgumentException for a name that is not a field
     */
    public Optional<Object> value(String field) {
        requireField(field);
        return Optional.ofNullable(values.get(field));
    }

    /**
     * Where {@code field}'s value came from.
     *
     * @throws IllegalArgumentException for a name that is not a field
     */
    public ConfigSource source(String field) {
        requireField(field);
        return sources.get(field);
    }

    /** Warnings the load produced (deprecated names, ignored variables, derived overrides). */
    public List<String> warnings() {
        return warnings;
    }

    /** Every set field's value by name, in table order; unset nullable fields are left out. */
    public Map<String, Object> toMap() {
        Map<String, Object> m = new LinkedHashMap<>();
        values.forEach((k, v) -> {
            if (v != null) {
                m.put(k, v);
            }
        });
        return Collections.unmodifiableMap(m);
    }

    /**
     * The effective config as aligned {@code key = value  (source)} lines, one per field in table
     * order, then one per {@code extra_config} entry ({@code extra_config.KEY}) and one per key of
     * {@link ExtraConfigKeys} left unset (its default, or {@code null} when the default is decided
     * elsewhere). Values are written
     * as JSON, so strings are quoted and unset fields read {@code null}. This is what the engine
     * prints once at start and what {@code ./lmcache4j config} shows.
     */
    public List<String> describe() {
        List<String[]> rows = new ArrayList<>();
        for (ConfigField f : schema.fields()) {
            Object v = values.get(f.name());
            String shown = f.kind() == FieldKind.JSON_OBJECT && v instanceof Map<?, ?> m && !m.isEmpty()
                    ? "{...} (" + m.size() + (m.size() == 1 ? " entry" : " entries") + " below)"
                    : Json.write(v);
            rows.add(new String[] {f.name(), shown, sources.get(f.name()).describe()});
            if (f.kind() == FieldKind.JSON_OBJECT && v instanceof Map<?, ?> m) {
                for (Map.Entry<?, ?> e : m.entrySet()) {
                    boolean secret = ExtraConfigKeys.SECRET.contains(String.valueOf(e.getKey()));
                    rows.add(new String[] {f.name() + "." + e.getKey(), secret ? "\"<hidden>\"" : Json.write(e.getValue()),
                            sources.get(f.name()).describe()});
                }
                if (f.name().equals("extra_config")) {
                    for (ExtraConfigKey<?> key : ExtraConfigKeys.ALL) {
                        if (!m.containsKey(key.name())) {
                            rows.add(new String[] {f.name() + "." + key.name(), Json.write(key.defaultValue().orElse(null)),
                                    new ConfigSource.Default().describe()});
                        }
                    }
                }
            }
        }
        int keyWidth = rows.stream().mapToInt(r -> r[0].length()).max().orElse(0);
        // Values longer than this do not push every source column to the right.
        int valueWidth = Math.min(24, rows.stream().mapToInt(r -> r[1].length()).max().orElse(0));
        List<String> lines = new ArrayList<>(rows.size());
        for (String[] r : rows) {
            lines.add(pad(r[0], keyWidth) + " = " + pad(r[1], valueWidth) + "  (" + r[2] + ")");
        }
        return List.copyOf(lines);
    }

    private static String pad(String s, int width) {
        return s.length() >= width ? s : s + " ".repeat(width - s.length());
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof LMCacheEngineConfig c && values.equals(c.values);
    }

    @Override
    public int hashCode() {
        return values.hashCode();
    }

    @Override
    public String toString() {
        return "LMCacheEngineConfig" + toMap();
    }

    private void requireField(String field) {
        if (schema.field(field).isEmpty()) {
            List<String> close = schema.suggest(field);
            throw new IllegalArgumentException("'" + field + "' is not a config field"
                    + (close.isEmpty() ? "" : " (did you mean '" + close.getFirst() + "'?)"));
        }
    }

    private boolean bool(String name) {
        return (Boolean) values.get(name);
    }

    private double dbl(String name) {
        return (Double) values.get(name);
    }

    private long bytes(String name) {
        return (long) (dbl(name) * BYTES_PER_GB);
    }

    private Optional<String> str(String name) {
        return Optional.ofNullable((String) values.get(name));
    }

    @SuppressWarnings("unchecked")
    private <T> Optional<List<T>> list(String name) {
        return Optional.ofNullable((List<T>) values.get(name));
    }
}
