package lmcache4j.engine.config.internal;

import static lmcache4j.engine.config.internal.ConfigField.define;
import static lmcache4j.engine.config.internal.FieldKind.BOOL;
import static lmcache4j.engine.config.internal.FieldKind.CHOICE;
import static lmcache4j.engine.config.internal.FieldKind.DOUBLE;
import static lmcache4j.engine.config.internal.FieldKind.DOUBLE_LIST;
import static lmcache4j.engine.config.internal.FieldKind.INT;
import static lmcache4j.engine.config.internal.FieldKind.INT_LIST;
import static lmcache4j.engine.config.internal.FieldKind.JSON_OBJECT;
import static lmcache4j.engine.config.internal.FieldKind.STRING;
import static lmcache4j.engine.config.internal.FieldKind.STRING_LIST;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

import lmcache4j.engine.config.ExtraConfigKeys;
import lmcache4j.engine.config.LMCacheEngineConfig;
import lmcache4j.engine.storage.policy.CachePolicies;

/**
 * The rows of {@link ConfigSchema#lmcache4j()}: LMCache's 2026 definition table (reference spec
 * §6.9) for the fields lmcache4j implements or will, with LMCache's names and defaults. Where
 * lmcache4j differs from LMCache the description says so. To add a knob, add a row here and a
 * typed getter to {@link LMCacheEngineConfig}; nothing else needs to change.
 */
public final class LMCacheFieldTable {
    private static final Pattern URL_WITH_SCHEME = Pattern.compile("[A-Za-z][A-Za-z0-9+.-]*://.*");

    public static final ConfigSchema SCHEMA = new ConfigSchema(fields(), aliases(), unsupported(),
            Map.of("ec_", "LMCache's second, EC engine config (ec_* keys, LMCACHE_EC_* variables)"),
            Set.of("LMCACHE_CONFIG_FILE", // selects the YAML file
                    "LMCACHE_CUDART", // lmcache4j.cuda: path of libcudart
                    "LMCACHE_LOG_LEVEL", // LMCache's logging level; logging is System.Logger's business here
                    "LMCACHE_TRACK_USAGE", // LMCache's usage telemetry switch
                    "LMCACHE_USE_EXPERIMENTAL")); // pre-v1 LMCache switch

    private LMCacheFieldTable() {
    }

    private static List<ConfigField> fields() {
        List<ConfigField> f = new ArrayList<>();
        core(f);
        blending(f);
        kvEvents(f);
        placement(f);
        lookup(f);
        lazyHostPool(f);
        peerToPeer(f);
        disaggregatedPrefill(f);
        operations(f);
        controller(f);
        return f;
    }

    /** Core. */
    private static void core(List<ConfigField> f) {
        f.add(define("chunk_size", INT).defaultValue(256).greaterThan(0)
                .description("Tokens per KV chunk: the unit of hashing, storage and lookup.").build());
        f.add(define("local_cpu", BOOL).defaultValue(true)
                .description("Keep chunks in the host-memory (CPU) tier. When false the CPU pool still exists as the "
                        + "staging buffer for disk and remote tiers but retains nothing.").build());
        f.add(define("max_local_cpu_size", DOUBLE).defaultValue(5.0).atLeast(0)
                .description("Size of the host-memory pool in GB (GiB: 1024^3 bytes).").build());
        f.add(define("local_cpu_use_hugepages", BOOL).defaultValue(false)
                .description("Back the host-memory pool with huge pages.").build());
        f.add(define("reserve_local_cpu_size", DOUBLE).defaultValue(0.0).atLeast(0)
                .description("GB of system memory to leave free when the CPU pool is capped by available memory.").build());
        f.add(define("local_disk", STRING).nullable().normalizeText(LMCacheFieldTable::stripFileScheme)
                .description("Directory of the local-disk tier, or comma-separated directories (sharded per GPU); "
                        + "a file:// prefix is stripped. Unset: no disk tier.").build());
        f.add(define("local_disk_path_sharding", CHOICE).defaultValue("by_gpu").allowed("by_gpu").caseInsensitive(false)
                .description("How several local_disk directories are shared out: by_gpu picks one per CUDA device.").build());
        f.add(define("max_local_disk_size", DOUBLE).defaultValue(0.0).atLeast(0)
                .description("Capacity of the local-disk tier in GB.").build());
        f.add(define("remote_url", STRING).nullable()
                .check(v -> URL_WITH_SCHEME.matcher((String) v).matches(), "a URL of the form scheme://...")
                .description("URL of the shared remote tier (for example redis://host:6379, lm://host:65432). "
                        + "Unset: no remote tier.").build());
        f.add(define("remote_serde", CHOICE).defaultValue("naive").allowed("naive", "lz4", "zstd").caseInsensitive(false)
                .rejects("cachegen", "cachegen is not supported by lmcache4j: its blobs are Python pickles of "
                        + "GPU-quantised tensors that a JVM cannot read or write; use naive, lz4 or zstd")
                .rejects("kivi", "kivi is an identity placeholder in LMCache and not supported by lmcache4j; use naive")
                .description("Serialisation of chunks sent to the remote tier. naive = raw bytes (LMCache's default); "
                        + "lz4 and zstd are lmcache4j additions (compressed).").build());
        f.add(define("use_layerwise", BOOL).defaultValue(false)
                .description("Store and retrieve layer by layer, pipelined with the model's forward pass.").build());
        f.add(define("save_decode_cache", BOOL).defaultValue(false)
                .description("Also store KV produced during decode, not only prefill.").build());
        f.add(define("pre_caching_hash_algorithm", CHOICE).defaultValue("sha256_cbor").allowed("sha256_cbor")
                .caseInsensitive(false).valueAlias("sha256_cbor_64bit", "sha256_cbor")
                .rejects("builtin", "builtin (LMCache's default) is Python's hash() of a tuple, salted per process "
                        + "by PYTHONHASHSEED; Java cannot reproduce it, so keys would never match. Use sha256_cbor "
                        + "(lmcache4j's default), vLLM's portable SHA-256 over CBOR")
                .description("Prefix-chain hash of token chunks. lmcache4j's default is sha256_cbor (vLLM's SHA-256 "
                        + "over CBOR; sha256_cbor_64bit is read as its alias); LMCache's default builtin is refused.").build());
        f.add(define("save_unfull_chunk", BOOL).defaultValue(false)
                .description("Store the trailing chunk of a sequence even when it has fewer than chunk_size tokens. "
                        + "Forced true by enable_blending.").build());
        f.add(define("blocking_timeout_secs", INT).defaultValue(10).greaterThan(0)
                .description("Seconds a blocking remote get waits before it counts as a miss.").build());
        f.add(define("cache_policy", CHOICE).defaultValue("LRU").allowed(CachePolicies.NAMES.toArray(String[]::new))
                .caseInsensitive(true)
                .rejects("cost_aware", "COST_AWARE (LMCache 2026) is not supported by lmcache4j yet; use one of "
                        + String.join(", ", CachePolicies.NAMES))
                .description("Eviction policy of the local tiers: LMCache's LRU, LFU, FIFO, MRU, S3FIFO; ARC (vLLM's); "
                        + "KV_ADAPTIVE, lmcache4j's own (reused chunks outlive fresh ones by a margin tuned on sampled "
                        + "replicas; orphaned and tail chunks first; docs/performance.md#eviction-policies-on-real-traffic).")
                .build());
        f.add(define("numa_mode", CHOICE).nullable().allowed("auto", "manual").caseInsensitive(false)
                .description("NUMA placement of the host pool: auto reads the GPU's node from sysfs; manual takes "
                        + "extra_config.gpu_to_numa_mapping (GPU index -> node). Unset: no binding.").build());
        f.add(define("enable_async_loading", BOOL).defaultValue(false)
                .description("Prefetch looked-up chunks in the background so retrieve only collects them; the lookup "
                        + "service (LookupServer, LookupClient) needs it.").build());
        f.add(define("extra_config", JSON_OBJECT)
                .description("Free-form settings (a YAML mapping, or JSON in LMCACHE_EXTRA_CONFIG). The keys lmcache4j "
                        + "reads are declared with their types and defaults in ExtraConfigKeys (ping_interval, "
                        + "ping_timeout, use_odirect, force_store_wait, gpu_to_numa_mapping, local_disk.*, ...) and "
                        + "listed by ./lmcache4j config; a wrong value is an error, an unknown key a warning. "
                        + "Unset: empty.").build());
        f.add(define("hash_seed", STRING).nullable().lmcache4jOnly()
                .description("lmcache4j only: the seed NONE_HASH (the start of every prefix-hash chain) is derived "
                        + "from, as vLLM derives it from PYTHONHASHSEED. Unset: PYTHONHASHSEED is used when set, "
                        + "else a random seed (keys then match no other process).").build());
    }

    /** Blending (CacheBlend). */
    private static void blending(List<ConfigField> f) {
        f.add(define("copy_threads", INT).nullable().range(1.0, true, 1024.0, true).lmcache4jOnly()
                .description("lmcache4j only: how many threads, the caller included, copy one chunk between the paged "
                        + "KV cache and host memory (store gathers, retrieve scatters); helpers join only for plans of "
                        + "at least 1 MiB per thread and only while idle. Ignored by the CUDA connector. Unset: the "
                        + "machine's cores, at most 8.").build());
        f.add(define("copy_streaming_stores", BOOL).defaultValue(true).lmcache4jOnly()
                .description("lmcache4j only: write host copies of at least 4 MiB (a chunk of most models) with non-temporal (streaming) stores "
                        + "where the machine offers them (x86-64 Linux: AVX2, else SSE2), so a gather's short runs do "
                        + "not first read every destination line from memory. false: ordinary cached stores "
                        + "(MemorySegment.copy) everywhere. Ignored by the CUDA connector.").build());
        f.add(define("controller_chunk_keys", CHOICE).defaultValue("lmcache").allowed("lmcache", "vllm").lmcache4jOnly()
                .description("lmcache4j only: the integer a chunk is known by in the control plane (cache controller, "
                        + "lookup service, P2P lookup). lmcache: LMCache's token database's keys (a chain of 64-bit "
                        + "ints from the same seed), so lmcache4j and LMCache workers share a controller; vllm: the "
                        + "chunk's vLLM block hash folded to its low 64 bits, as vLLM's KV events carry it. Every "
                        + "engine, scheduler and controller of a deployment must use the same.").build());
        f.add(define("storage_chunk_keys", CHOICE).defaultValue("lmcache").allowed("lmcache", "digest").lmcache4jOnly()
                .description("lmcache4j only: the hash in a chunk's storage key, which names its disk file, Redis "
                        + "keys, fs:// file, lm:// entry and S3 object. lmcache: LMCache's current keys (its token "
                        + "database's 64-bit integer chain, written in hex without padding), so a store is shared with "
                        + "today's LMCache; digest: the 64-hex-digit SHA-256 digests of LMCache before its PR #2999 and of "
                        + "lmcache4j stores written before this setting, for a store written in that form (see "
                        + "docs/operations.md, migrating a store).").build());
    }

    /** KV events (vLLM's format, for KV-aware routers). */
    private static void kvEvents(List<ConfigField> f) {
        f.add(define("kv_events_endpoint", STRING).nullable().lmcache4jOnly()
                .description("lmcache4j only: publish the tiers' admits and evictions as vLLM's KV events "
                        + "(KVEventBatch of BlockStored/BlockRemoved/AllBlocksCleared, msgspec msgpack) on a ZeroMQ PUB "
                        + "socket at this address, as vLLM's endpoint: bound when it holds * or :: or is ipc:// or "
                        + "inproc://, else connected (e.g. tcp://*:5557). Unset: no events.").build());
        f.add(define("kv_events_replay_endpoint", STRING).nullable().lmcache4jOnly()
                .description("lmcache4j only: a ROUTER address (bound) where a subscriber asks for the batches from a "
                        + "sequence number on, as vLLM's replay_endpoint (e.g. tcp://*:5558). Unset: no replay.").build());
        f.add(define("kv_events_topic", STRING).defaultValue("").lmcache4jOnly()
                .description("lmcache4j only: the topic frame of every KV event message, as vLLM's topic.").build());
        f.add(define("kv_events_buffer_steps", INT).defaultValue(10_000).range(1.0, true, 1_000_000.0, true).lmcache4jOnly()
                .description("lmcache4j only: KV event batches kept for replay (vLLM's buffer_steps).").build());
        f.add(define("kv_events_hwm", INT).defaultValue(100_000).range(1.0, true, 10_000_000.0, true).lmcache4jOnly()
                .description("lmcache4j only: the PUB socket's send high-water mark in messages (vLLM's hwm).").build());
        f.add(define("kv_events_max_queue_size", INT).defaultValue(100_000).range(1.0, true, 10_000_000.0, true)
                .lmcache4jOnly()
                .description("lmcache4j only: KV events waiting to be published at most; beyond it they are dropped "
                        + "and counted, never waited for (vLLM's max_queue_size).").build());
        f.add(define("enable_blending", BOOL).defaultValue(false)
                .description("CacheBlend: reuse non-prefix segments split at blend_special_str. Forces save_unfull_chunk.").build());
        f.add(define("blend_recompute_ratios", DOUBLE_LIST).nullable()
                .description("Blending: fraction of tokens recomputed per check layer.").build());
        f.add(define("blend_thresholds", DOUBLE_LIST).nullable()
                .description("Blending: deviation thresholds per check layer.").build());
        f.add(define("blend_check_layers", INT_LIST).nullable()
                .description("Blending: layers where deviations are checked.").build());
        f.add(define("blend_min_tokens", INT).defaultValue(256).atLeast(0)
                .description("Blending: shortest segment worth blending, in tokens.").build());
        f.add(define("blend_special_str", STRING).defaultValue(" # # ")
                .description("Blending: separator text between reusable segments.").build());
    }

    /** Placement. */
    private static void placement(List<ConfigField> f) {
        f.add(define("retrieve_locations", STRING_LIST).nullable()
                .description("Backends lookups and retrieves search (for example LocalCPUBackend,LocalDiskBackend). "
                        + "Unset: all.").build());
        f.add(define("store_location", STRING).nullable()
                .description("The one backend stores go to. Unset: all.").build());
    }

    /** Lookup. */
    private static void lookup(List<ConfigField> f) {
        f.add(define("lookup_timeout_ms", INT).defaultValue(3000).greaterThan(0)
                .description("Milliseconds a lookup request waits for the lookup server; an asynchronous lookup "
                        + "still unanswered then counts as 0 hit tokens.").build());
        f.add(define("lookup_server_worker_ids", INT_LIST).nullable()
                .description("Workers that run a lookup server and that the scheduler's lookup client asks (the "
                        + "answer is the minimum over them). Unset or empty: every worker; LMCache's default for an "
                        + "MLA model is [0].").build());
        f.add(define("lookup_scheduler_url", STRING).nullable().lmcache4jOnly()
                .description("lmcache4j only: where the scheduler's lookup client binds its PULL socket for answers "
                        + "and every worker's lookup server connects (LMCache derives an ipc:// path from "
                        + "lmcache_rpc_port instead). tcp://127.0.0.1:<port> or another loopback address, or ipc://.")
                .build());
        f.add(define("lookup_worker_urls", STRING_LIST).nullable().lmcache4jOnly()
                .description("lmcache4j only: one URL per worker rank, in rank order, where that worker's lookup "
                        + "server binds its PULL socket for lookups (LMCache: the lookup_worker ipc:// path of the "
                        + "rank). Loopback tcp:// or ipc://.").build());
        f.add(define("min_retrieve_tokens", INT).defaultValue(0).atLeast(0)
                .description("Skip retrieving below this many hit tokens (the hits still count as cached). 0: off.").build());
    }

    /** Lazy host pool. */
    private static void lazyHostPool(List<ConfigField> f) {
        f.add(define("enable_lazy_memory_allocator", BOOL).defaultValue(false)
                .description("Grow the host pool on demand instead of allocating it whole at start.").build());
        f.add(define("lazy_memory_initial_ratio", DOUBLE).defaultValue(0.2).range(0.0, false, 1.0, true)
                .description("Lazy pool: fraction of max_local_cpu_size allocated at start.").build());
        f.add(define("lazy_memory_expand_trigger_ratio", DOUBLE).defaultValue(0.5).range(0.0, false, 1.0, true)
                .description("Lazy pool: usage fraction of the current capacity that starts growth.").build());
        f.add(define("lazy_memory_step_ratio", DOUBLE).defaultValue(0.1).range(0.0, false, 1.0, true)
                .description("Lazy pool: fraction of max_local_cpu_size added per growth step.").build());
        f.add(define("lazy_memory_safe_size", DOUBLE).defaultValue(0.0).atLeast(0)
                .description("Lazy pool: only used when max_local_cpu_size (GB) is larger than this.").build());
    }

    /** Peer-to-peer. */
    private static void peerToPeer(List<ConfigField> f) {
        f.add(define("enable_p2p", BOOL).defaultValue(false)
                .description("Serve this engine's CPU and disk tiers to peers (read-only) and fetch chunks other "
                        + "instances hold, found through the cache controller (needs enable_controller).").build());
        f.add(define("p2p_host", STRING).nullable()
                .description("Address this engine's P2P transfer server binds and peers connect to.").build());
        f.add(define("p2p_init_ports", INT_LIST).nullable()
                .description("P2P transfer server port of each worker (worker i uses entry i; 0: any free port).").build());
        f.add(define("p2p_lookup_ports", INT_LIST).nullable()
                .description("LMCache's peer lookup sockets; accepted for compatibility, unused: lmcache4j finds "
                        + "holders through the controller and pulls over the transfer port.").build());
    }

    /**
     * Disaggregated prefill (PD): LMCache's names and meanings, over lmcache4j's own channel (TCP with
     * the lm:// handshake's proof of the deployment's token and a tag on every message; see docs/pd.md).
     */
    private static void disaggregatedPrefill(List<ConfigField> f) {
        f.add(define("enable_pd", BOOL).defaultValue(false)
                .description("Disaggregated prefill: a sender (prefiller) pushes each computed chunk into a receiver's "
                        + "(decoder's) PD buffer, which its retrieves then read. Needs pd_role, pd_buffer_size, "
                        + "pd_buffer_device and a token (extra_config.p2p_token or deployment_secret_file); forces "
                        + "save_unfull_chunk, as in LMCache.").build());
        f.add(define("pd_role", CHOICE).nullable().allowed("sender", "receiver").caseInsensitive(false)
                .description("sender: the prefiller, which pushes KV; receiver: the decoder, which holds it in its PD "
                        + "buffer.").build());
        f.add(define("pd_buffer_size", DOUBLE).nullable()
                .check(v -> v instanceof Double d && d == Math.rint(d) && d >= 1 << 20 && d <= 1L << 46,
                        "a whole number of bytes from 1 MiB (1048576) up")
                .description("Bytes of the PD buffer (an int in bytes, as LMCache's): the receiver's room for chunks "
                        + "pushed to it, the sender's for chunks in flight.").build());
        f.add(define("pd_buffer_device", CHOICE).nullable().allowed("cpu").caseInsensitive(false)
                .rejects("cuda", "lmcache4j's PD buffer is host memory (pinned when a CUDA runtime is present): use "
                        + "cpu. LMCache's cuda buffer is written by NIXL, which lmcache4j does not have")
                .description("Where the PD buffer lives: cpu (host memory, CUDA-pinned when the runtime is "
                        + "available). LMCache's cuda is refused.").build());
        f.add(define("pd_peer_host", STRING).nullable()
                .description("Receiver: the address its PD ports bind and senders connect to.").build());
        f.add(define("pd_peer_init_port", INT_LIST).nullable()
                .description("Receiver: the transfer channel's port of each worker (worker i uses entry i; 0: any "
                        + "free port); senders write chunks there.").build());
        f.add(define("pd_peer_alloc_port", INT_LIST).nullable()
                .description("Receiver: the allocation port of each worker (worker i uses entry i; 0: any free "
                        + "port); senders ask there for room.").build());
        f.add(define("pd_proxy_host", STRING).nullable()
                .description("Sender: the address of the PD proxy that is told when a request's KV is ready.").build());
        f.add(define("pd_proxy_port", INT).nullable().range(1.0, true, 65535.0, true)
                .description("Sender: the PD proxy's notice port.").build());
        f.add(define("transfer_channel", CHOICE).nullable().allowed("tcp").caseInsensitive(false)
                .rejects("nixl", "NIXL (GPU RDMA) is not supported by lmcache4j; its one channel is tcp "
                        + "(TCP with the lm:// handshake's token proof and a tag on every message), used when "
                        + "transfer_channel is tcp or unset")
                .description("The PD channel: tcp (lmcache4j's; also what unset means). LMCache's nixl is refused.")
                .build());
    }

    /** Operations. */
    private static void operations(List<ConfigField> f) {
        f.add(define("pin_timeout_sec", INT).defaultValue(300).greaterThan(0)
                .description("Seconds after which a chunk still pinned by a lookup is force-unpinned (LMCache). lmcache4j: "
                        + "a lookup's pins and a prefetch (an asynchronous lookup's) that no retrieve consumed or unpinned "
                        + "within this time are released.").build());
        f.add(define("max_pending_prefetches", INT).defaultValue(10_000).greaterThan(0).lmcache4jOnly()
                .description("lmcache4j only: the most prefetches (asynchronous lookups) held for requests at once; a "
                        + "new request's prefetch beyond it is refused (a miss, counted as refused), so lookups that "
                        + "no retrieve follows cannot make the engine hold without bound until pin_timeout_sec.").build());
        f.add(define("pin_check_interval_sec", INT).defaultValue(30).greaterThan(0)
                .description("Seconds between scans for pins past pin_timeout_sec.").build());
        f.add(define("internal_api_server_enabled", BOOL).defaultValue(false)
                .description("Serve the internal HTTP API (metrics, config, cache inspection).").build());
        f.add(define("internal_api_server_host", STRING).defaultValue("0.0.0.0")
                .description("Address the internal API server binds.").build());
        f.add(define("internal_api_server_port_start", INT).defaultValue(6999).range(1.0, true, 65535.0, true)
                .description("Internal API server port of worker 0; worker i uses port_start + i.").build());
    }

    /** Cache controller (worker side). */
    private static void controller(List<ConfigField> f) {
        f.add(define("enable_controller", BOOL).defaultValue(false)
                .description("Report admits and evicts to the cache controller, heartbeat, and answer its control "
                        + "messages (clear, pin, health, move, check-finish) on a REP socket.").build());
        f.add(define("lmcache_instance_id", STRING).defaultValue("lmcache_default_instance")
                .description("This serving instance's id at the controller (each engine process of one instance "
                        + "shares it; its workers are told apart by worker id).").build());
        f.add(define("controller_pull_url", STRING).nullable()
                .description("host:port of the controller's PULL socket, where workers push admits, evicts and "
                        + "full syncs (alias controller_url). Needed with enable_controller.").build());
        f.add(define("controller_reply_url", STRING).nullable()
                .description("host:port of the controller's ROUTER socket for registration and full-sync requests. "
                        + "Needed with enable_controller.").build());
        f.add(define("lmcache_worker_ports", INT_LIST).nullable()
                .description("Ports of the workers' REP sockets for the controller's control messages, one per "
                        + "worker id (worker i binds the i-th). Unset: an ephemeral port, told to the controller "
                        + "at registration.").build());
        f.add(define("lmcache_worker_heartbeat_delay_time", DOUBLE).defaultValue(10.0).atLeast(0)
                .description("Seconds between registration and the first heartbeat (fractions allowed; LMCache "
                        + "reads an int).").build());
        f.add(define("lmcache_worker_heartbeat_time", DOUBLE).defaultValue(10.0).atLeast(0)
                .description("Seconds between heartbeats to the controller; 0 turns them off. LMCache's default is "
                        + "unset (no heartbeats), which lets its controller drop a silent worker after its timeout; "
                        + "lmcache4j heartbeats every 10 s unless told otherwise.").build());
        f.add(define("controller_report_queue_size", INT).defaultValue(65536).greaterThan(0).lmcache4jOnly()
                .description("lmcache4j only: admits and evicts waiting for the controller at most; past it they "
                        + "are dropped, counted, and a full re-sync follows, so a slow controller never slows "
                        + "the engine.").build());
        f.add(define("deployment_secret_file", STRING).nullable().lmcache4jOnly()
                .description("lmcache4j only: a file (mode 600) holding the deployment's shared secret. With it the "
                        + "engine's ZeroMQ sockets to the controller and its control socket use CURVE with keys "
                        + "derived from the secret, so only the deployment's processes connect (docs/operations.md, "
                        + "Security). Unset: plain sockets, as LMCache's.").build());
    }


    /** LMCache's deprecated key names (spec §6.8); accepted with a warning, mapped to the new name. */
    private static Map<String, String> aliases() {
        Map<String, String> a = new LinkedHashMap<>();
        a.put("enable_xpyd", "enable_pd");
        a.put("nixl_peer_host", "pd_peer_host");
        a.put("nixl_peer_init_port", "pd_peer_init_port");
        a.put("nixl_peer_alloc_port", "pd_peer_alloc_port");
        a.put("nixl_proxy_host", "pd_proxy_host");
        a.put("nixl_proxy_port", "pd_proxy_port");
        a.put("nixl_buffer_size", "pd_buffer_size");
        a.put("nixl_role", "pd_role");
        a.put("controller_url", "controller_pull_url");
        a.put("lmcache_worker_port", "lmcache_worker_ports");
        a.put("plugin_locations", "runtime_plugin_locations");
        a.put("external_backends", "storage_plugins");
        return a;
    }

    /** LMCache keys lmcache4j knows and refuses, with the feature they belong to. */
    private static Map<String, String> unsupported() {
        Map<String, String> u = new LinkedHashMap<>();
        group(u, "LMCache's multi-process server mode (SGLang)", "mp_host", "mp_port");
        group(u, "choosing which workers run a controller worker (lmcache4j runs one in every engine worker)",
                "lmcache_worker_ids");
        group(u, "LMCache's later PD options (lmcache4j's PD has enable_pd, pd_role, pd_buffer_size, pd_buffer_device, "
                + "pd_peer_host, pd_peer_init_port, pd_peer_alloc_port, pd_proxy_host, pd_proxy_port; docs/pd.md)",
                "pd_peer_query_port", "pd_allocation_timeout_sec", "pd_shutdown_timeout_sec",
                "pd_condition_poll_interval_sec", "pd_max_prefill_len", "pd_backend_mode",
                "pd_skip_proxy_notification", "pd_bidirectional");
        group(u, "NIXL transfer and storage", "enable_nixl", "nixl_backends", "nixl_buffer_device",
                "nixl_peer_port", "nixl_receiver_port");
        group(u, "GPU-direct storage (cuFile/GDS, Weka) and the Maru CXL backend", "gds_path", "gds_path_sharding",
                "gds_buffer_size", "use_gds", "gds_backend", "cufile_buffer_size", "weka_path", "maru_path",
                "maru_pool_size");
        group(u, "the audit connector (deprecated in LMCache too)", "audit_actual_remote_url");
        group(u, "Python plugin loading", "runtime_plugin_locations", "storage_plugins", "remote_storage_plugins",
                "script_allowed_imports");
        group(u, "LMCache's external lookup clients and the scheduler's lookup bypass", "external_lookup_client",
                "hit_miss_ratio", "enable_scheduler_bypass_lookup");
        group(u, "the COST_AWARE cache policy", "cost_aware_half_life_seconds", "cost_aware_ewma_alpha");
        group(u, "LMCache's observability extras (KV events, chunk statistics, API index lists, priorities)",
                "internal_api_server_include_index_list", "internal_api_server_socket_path_prefix", "priority_limit",
                "enable_kv_events", "enable_chunk_statistics", "chunk_statistics_auto_start",
                "chunk_statistics_auto_exit_timeout_hours", "chunk_statistics_auto_exit_target_unique_chunks",
                "chunk_statistics_strategy");
        group(u, "LMCache's v3 GPU connector", "use_gpu_connector_v3");
        group(u, "the remote config service", "remote_config_url", "app_id");
        group(u, "the vLLM-Omni hidden-state cache", "enable_hidden_state_cache", "max_hidden_state_cpu_size",
                "hidden_state_layers", "hidden_states_retrieve_mode");
        group(u, "Python's garbage-collector switch, which has no meaning on the JVM", "py_enable_gc");
        return u;
    }

    private static void group(Map<String, String> into, String feature, String... names) {
        for (String n : names) {
            into.put(n, feature);
        }
    }

    /** LMCache's {@code _parse_local_disk}: strips {@code file://} from each comma-separated path. */
    public static String stripFileScheme(String value) {
        List<String> parts = new ArrayList<>();
        for (String p : value.split(",", -1)) {
            String s = p.strip();
            if (s.isEmpty()) {
                continue;
            }
            parts.add(s.startsWith("file://") ? s.substring("file://".length()) : s);
        }
        return String.join(",", parts);
    }
}
