package lmcache4j.engine.config;

import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Every {@code extra_config} key lmcache4j reads or checks, in one place: the loader validates
 * them, {@code ./lmcache4j config} lists them with their effective values, and the typed settings
 * ({@link DiskTierSettings}, {@link RemoteTierSettings}) read them. Other keys are kept (LMCache
 * plugins may read them) with a warning.
 */
public final class ExtraConfigKeys {
    private ExtraConfigKeys() {
    }

    // ---- disk tier ------------------------------------------------------------------------------
    public static final ExtraConfigKey<Boolean> USE_ODIRECT = ExtraConfigKey.bool("use_odirect", Optional.of(false),
            "LMCache's: the disk tier reads and writes chunk files with O_DIRECT where the file system allows it");
    public static final ExtraConfigKey<Boolean> DISK_FSYNC = ExtraConfigKey.bool("local_disk.fsync", Optional.of(false),
            "lmcache4j: fsync each chunk file before it is offered");
    public static final ExtraConfigKey<Integer> DISK_IO_THREADS = ExtraConfigKey.positiveCount("local_disk.io_threads", 4,
            "lmcache4j: I/O threads of the disk tier (4, as LMCache)");
    public static final ExtraConfigKey<Integer> DISK_MAX_QUEUED_PUTS = ExtraConfigKey.positiveCount(
            "local_disk.max_queued_puts", 64, "lmcache4j: puts that may wait for the disk before stores skip the tier");
    public static final ExtraConfigKey<Boolean> DISK_CLAIM_NONEMPTY_DIR = ExtraConfigKey.bool(
            "local_disk.claim_nonempty_dir", Optional.of(false), "lmcache4j: true uses a non-empty local_disk directory "
                    + "without lmcache4j's marker (its other files are never touched); false refuses it");
    public static final ExtraConfigKey<Boolean> DISK_VERIFY_IN_BACKGROUND = ExtraConfigKey.bool(
            "local_disk.verify_in_background", Optional.of(false), "lmcache4j: true starts without waiting for the "
                    + "payload check of recovered chunk files (they are offered as they pass it)");

    // ---- remote tier ----------------------------------------------------------------------------
    public static final ExtraConfigKey<Double> PING_INTERVAL = ExtraConfigKey.positiveSeconds("ping_interval", 30,
            "LMCache's: seconds between health pings of the remote store");
    public static final ExtraConfigKey<Double> PING_TIMEOUT = ExtraConfigKey.positiveSeconds("ping_timeout", 5,
            "LMCache's: seconds a health ping may take before the remote counts as down");
    public static final ExtraConfigKey<Boolean> REMOTE_MLA_WORKER_ID_AS0 = ExtraConfigKey.bool(
            "remote_enable_mla_worker_id_as0", Optional.empty(), "LMCache's: workers other than 0 read worker 0's "
                    + "remote copy and write nothing; unset: on for an MLA model");
    public static final ExtraConfigKey<String> REDIS_LAYOUT = ExtraConfigKey.choice("redis_layout",
            List.of("single", "split"), "single", "lmcache4j: how a redis remote_url stores a chunk: single "
                    + "(LMCache's <key>kv_bytes + <key>metadata, readable by LMCache) or split (parts of "
                    + "redis_split_part_mb plus a manifest written last, fetched over redis_split_connections connections "
                    + "and spread over a cluster's masters; lmcache4j only, beside LMCache's keys in one Redis)");
    public static final ExtraConfigKey<Integer> REDIS_SPLIT_PART_MB = ExtraConfigKey.countIn("redis_split_part_mb", 1, 8, lmcache4j.engine.remote.redis.RedisLayout.DEFAULT_PART_MB,
            "lmcache4j: the part size in MiB of redis_layout split (1..8)");
    public static final ExtraConfigKey<Integer> REDIS_SPLIT_CONNECTIONS = ExtraConfigKey.countIn("redis_split_connections",
            1, 16, 4, "lmcache4j: connections over which redis_layout split sends a chunk's parts (1..16)");

    // ---- peer-to-peer -----------------------------------------------------------------------------
    public static final ExtraConfigKey<Integer> P2P_TIMEOUT_MS = ExtraConfigKey.countIn("p2p_timeout_ms", 1, 600_000, 5_000,
            "lmcache4j: the deadline in ms of one peer fetch (controller lookup included); past it, or when the peer "
                    + "dies mid-transfer, the chunk is a miss");
    public static final ExtraConfigKey<String> P2P_TOKEN = ExtraConfigKey.text("p2p_token",
            "lmcache4j: the shared secret of the P2P transfer servers and the PD channel (16+ characters, the same in "
                    + "every instance): every engine's transfer server demands it and every fetch checks the peer's proof "
                    + "of it and each chunk's tag; enable_p2p and enable_pd need it unless deployment_secret_file derives one");
    public static final ExtraConfigKey<Integer> P2P_CONNECTIONS = ExtraConfigKey.countIn("p2p_connections", 1, 64, 4,
            "lmcache4j: connections per peer over which chunks are fetched in parallel");

    // ---- disaggregated prefill ------------------------------------------------------------------
    public static final ExtraConfigKey<Integer> PD_TIMEOUT_MS = ExtraConfigKey.countIn("pd_timeout_ms", 1, 600_000, 5_000,
            "lmcache4j: the bound in ms of every PD wait: a sender's connect, allocation, write and notice (past it "
                    + "the rest of the request is not pushed and the decoder computes it), and a receiver's room "
                    + "allocated but not written (freed after it)");
    public static final ExtraConfigKey<Integer> PD_UNCLAIMED_TTL_MS = ExtraConfigKey.countIn("pd_unclaimed_ttl_ms", 1,
            3_600_000, 60_000, "lmcache4j: a receiver frees a chunk that landed in its PD buffer and that no retrieve "
                    + "read within this many ms (a request the proxy sent elsewhere, or that died)");

    // ---- the engine's bound ZeroMQ sockets (controller worker's control socket, lookup server) ----
    public static final ExtraConfigKey<Integer> ZMQ_MAX_CONNECTIONS = ExtraConfigKey.countIn("zmq.max_connections", 1,
            1_000_000, 256, "lmcache4j: connections each of the engine's bound ZeroMQ sockets (the controller worker's "
                    + "control socket, the lookup server's) keeps at once; more are closed as they arrive");
    public static final ExtraConfigKey<Integer> ZMQ_MAX_CONNECTIONS_PER_HOST = ExtraConfigKey.countIn(
            "zmq.max_connections_per_host", 1, 1_000_000, 256, "lmcache4j: of zmq.max_connections, from one address");
    public static final ExtraConfigKey<Integer> ZMQ_MAX_HANDSHAKING = ExtraConfigKey.countIn("zmq.max_handshaking", 1,
            1_000_000, 64, "lmcache4j: of zmq.max_connections, not yet proven (with deployment_secret_file: in their "
                    + "CURVE handshake; without: before their first message)");
    public static final ExtraConfigKey<Double> ZMQ_HANDSHAKE_TIMEOUT = ExtraConfigKey.positiveSeconds(
            "zmq.handshake_timeout", 30, "lmcache4j: seconds a connection to those sockets has to prove itself, greeted "
                    + "or not, before it is closed");

    // ---- engine ---------------------------------------------------------------------------------
    public static final ExtraConfigKey<Boolean> FORCE_STORE_WAIT = ExtraConfigKey.bool("force_store_wait",
            Optional.of(false), "LMCache's: a store waits for memory (up to blocking_timeout_secs) instead of "
                    + "stopping when none is free");
    public static final ExtraConfigKey<Map<?, ?>> GPU_TO_NUMA_MAPPING = ExtraConfigKey.mapping(
            "gpu_to_numa_mapping", "LMCache's: GPU index -> NUMA node of the host pool, read when numa_mode is manual");

    // ---- LMCache's, checked but without effect here ----------------------------------------------
    public static final ExtraConfigKey<Boolean> SAVE_ONLY_FIRST_RANK = ExtraConfigKey.bool("save_only_first_rank",
            Optional.empty(), "LMCache's; type-checked, lmcache4j does not act on it");
    public static final ExtraConfigKey<Boolean> USE_EXISTS_SYNC = ExtraConfigKey.bool("use_exists_sync",
            Optional.empty(), "LMCache's; type-checked, lmcache4j does not act on it");
    public static final ExtraConfigKey<Boolean> SAVE_CHUNK_META = ExtraConfigKey.bool("save_chunk_meta",
            Optional.empty(), "LMCache's; type-checked, lmcache4j does not act on it");

    public static final ExtraConfigKey<String> S3_REGION = ExtraConfigKey.text("s3_region",
            "LMCache's: the region s3:// requests are signed for; unset: the region in an AWS endpoint's host name, else "
                    + "the AWS SDK's region chain (AWS_REGION, the profile), else us-east-1");
    public static final ExtraConfigKey<Integer> S3_NUM_IO_THREADS = ExtraConfigKey.countIn("s3_num_io_threads", 1, 1024, 64,
            "LMCache's: the S3 client's I/O threads (lmcache4j: its Netty event loops, at most twice the machine's cores)");
    public static final ExtraConfigKey<Integer> S3_MAX_INFLIGHT_REQS = ExtraConfigKey.countIn("s3_max_inflight_reqs", 1, 4096, 64,
            "LMCache's (its earlier S3 connector): S3 requests (connections) in flight at once; more wait for one");
    public static final ExtraConfigKey<Integer> S3_PART_SIZE = ExtraConfigKey.countIn("s3_part_size", 0, Integer.MAX_VALUE,
            0, // one GET: faster than ranged parts against the servers measured (docs/performance.md, bench s3)
            "lmcache4j: bytes of each ranged GET when an S3 object larger than this is read in parallel parts; 0 (the "
                    + "default): one GET per object, as LMCache reads (its earlier connector named its part size so)");
    public static final ExtraConfigKey<Boolean> DISABLE_TLS = ExtraConfigKey.bool("disable_tls", Optional.of(false),
            "LMCache's: plain HTTP to an s3:// endpoint (a local MinIO or s3proxy); false: HTTPS");
    public static final ExtraConfigKey<String> AWS_ACCESS_KEY_ID = ExtraConfigKey.textOrEmpty("aws_access_key_id",
            "LMCache's: the S3 access key id, with aws_secret_access_key; unset or empty: the AWS SDK's default "
                    + "credentials chain (environment, profile, container or instance role). Never printed");
    public static final ExtraConfigKey<String> AWS_SECRET_ACCESS_KEY = ExtraConfigKey.textOrEmpty("aws_secret_access_key",
            "LMCache's: the S3 secret key, with aws_access_key_id. Never printed");
    public static final ExtraConfigKey<Boolean> S3_PREFER_HTTP2 = ExtraConfigKey.bool("s3_prefer_http2",
            Optional.empty(), "LMCache's; type-checked, lmcache4j does not act on it (S3 answers over HTTP/1.1)");
    public static final ExtraConfigKey<Boolean> S3_ENABLE_S3EXPRESS = ExtraConfigKey.bool("s3_enable_s3express",
            Optional.of(false), "LMCache's: S3 Express One Zone signing; lmcache4j refuses true (not supported)");

    /** Keys whose values are secrets: the effective config shows them as {@code "<hidden>"}. */
    public static final java.util.Set<String> SECRET = java.util.Set.of(P2P_TOKEN.name(), AWS_ACCESS_KEY_ID.name(),
            AWS_SECRET_ACCESS_KEY.name());

    /** Every declared key, in the order {@code ./lmcache4j config} lists them. */
    public static final List<ExtraConfigKey<?>> ALL = List.of(USE_ODIRECT, DISK_FSYNC, DISK_IO_THREADS,
            DISK_MAX_QUEUED_PUTS, DISK_CLAIM_NONEMPTY_DIR, DISK_VERIFY_IN_BACKGROUND, PING_INTERVAL, PING_TIMEOUT,
            REMOTE_MLA_WORKER_ID_AS0, REDIS_LAYOUT, REDIS_SPLIT_PART_MB, REDIS_SPLIT_CONNECTIONS, S3_REGION, S3_NUM_IO_THREADS,
            S3_MAX_INFLIGHT_REQS, S3_PART_SIZE, DISABLE_TLS, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, S3_PREFER_HTTP2,
            S3_ENABLE_S3EXPRESS, P2P_TIMEOUT_MS, P2P_TOKEN, P2P_CONNECTIONS, ZMQ_MAX_CONNECTIONS, ZMQ_MAX_CONNECTIONS_PER_HOST,
            ZMQ_MAX_HANDSHAKING, ZMQ_HANDSHAKE_TIMEOUT, PD_TIMEOUT_MS,
            PD_UNCLAIMED_TTL_MS, FORCE_STORE_WAIT, GPU_TO_NUMA_MAPPING, SAVE_ONLY_FIRST_RANK, USE_EXISTS_SYNC,
            SAVE_CHUNK_META);

    /** The declared key called {@code name}, if there is one. */
    public static Optional<ExtraConfigKey<?>> named(String name) {
        return ALL.stream().<ExtraConfigKey<?>>map(k -> k).filter(k -> k.name().equals(name)).findFirst();
    }
}
