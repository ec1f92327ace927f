package lmcache4j.engine.config;

import java.util.Optional;

/**
 * The remote tier's settings, typed, from {@code remote_url}, {@code remote_serde},
 * {@code blocking_timeout_secs} and the {@code extra_config} keys of {@link ExtraConfigKeys}
 * (validated when the config was loaded). Present only when {@code remote_url} is set
 * ({@link LMCacheEngineConfig#remoteTier()}).
 *
 * @param url                 {@code remote_url}
 * @param serde               {@code remote_serde}: naive, lz4 or zstd
 * @param blockingTimeoutSecs {@code blocking_timeout_secs}: the longest a get waits
 * @param pingIntervalSecs    {@code extra_config.ping_interval}
 * @param pingTimeoutSecs     {@code extra_config.ping_timeout}
 * @param mlaWorkerIdAs0      {@code extra_config.remote_enable_mla_worker_id_as0}; empty: decided by the model (on for MLA)
 * @param redisLayout         {@code extra_config.redis_layout}: single (LMCache's) or split
 * @param redisSplitPartMb    {@code extra_config.redis_split_part_mb}
 * @param redisSplitConnections {@code extra_config.redis_split_connections}
 */
public record RemoteTierSettings(String url, String serde, double blockingTimeoutSecs, double pingIntervalSecs,
                                 double pingTimeoutSecs, Optional<Boolean> mlaWorkerIdAs0, String redisLayout,
                                 int redisSplitPartMb, int redisSplitConnections) {

    /**
     * Whether worker {@code workerId} of {@code worldSize} reads worker 0's copy and writes nothing
     * (LMCache's MLA rule), for a model that is or is not MLA.
     */
    public boolean readsAsWorkerZero(boolean mla, int worldSize, int workerId) {
        return mlaWorkerIdAs0.orElse(mla) && worldSize > 1 && workerId != 0;
    }

    static Optional<RemoteTierSettings> from(LMCacheEngineConfig config) {
        var extra = config.extraConfig();
        return config.remoteUrl().map(url -> new RemoteTierSettings(url, config.remoteSerde(), config.blockingTimeoutSecs(),
                ExtraConfigKeys.PING_INTERVAL.valueOrDefault(extra), ExtraConfigKeys.PING_TIMEOUT.valueOrDefault(extra),
                ExtraConfigKeys.REMOTE_MLA_WORKER_ID_AS0.valueIn(extra), ExtraConfigKeys.REDIS_LAYOUT.valueOrDefault(extra),
                ExtraConfigKeys.REDIS_SPLIT_PART_MB.valueOrDefault(extra),
                ExtraConfigKeys.REDIS_SPLIT_CONNECTIONS.valueOrDefault(extra)));
    }
}
