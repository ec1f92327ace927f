package lmcache4j.s3;

import java.util.Map;
import java.util.Optional;

import lmcache4j.engine.config.ExtraConfigKeys;

/**
 * The S3 tier's settings, from {@code extra_config} (LMCache's names where LMCache has them) with the
 * URL's options winning. Credentials are held only as the provider the client signs with, and
 * {@link #toString()} never shows them.
 *
 * @param region          {@code s3_region} or the URL's; empty: the AWS SDK's region chain, else us-east-1
 * @param ioThreads       {@code s3_num_io_threads}, capped at twice the cores: the Netty client's event loops
 * @param maxInFlight     {@code s3_max_inflight_reqs}: requests (connections) in flight at once
 * @param partSize        {@code s3_part_size}: bytes per ranged GET of a large object, 0 for one GET
 * @param tls             HTTPS unless {@code disable_tls}
 * @param accessKeyId     {@code aws_access_key_id}, when set (with the secret)
 * @param secretAccessKey {@code aws_secret_access_key}, when set
 */
public record S3Settings(Optional<String> region, int ioThreads, int maxInFlight, int partSize, boolean tls,
                         Optional<String> accessKeyId, Optional<String> secretAccessKey) {

    /** The settings {@code extraConfig} and {@code location} give. */
    public static S3Settings of(Map<String, Object> extraConfig, S3Location location) {
        if (ExtraConfigKeys.S3_ENABLE_S3EXPRESS.valueOrDefault(extraConfig)) {
            throw new IllegalArgumentException("extra_config.s3_enable_s3express: true is not supported by lmcache4j "
                    + "(S3 Express One Zone's session authentication); remove it or set it to false");
        }
        Optional<String> id = ExtraConfigKeys.AWS_ACCESS_KEY_ID.valueIn(extraConfig).filter(v -> !v.isEmpty());
        Optional<String> secret = ExtraConfigKeys.AWS_SECRET_ACCESS_KEY.valueIn(extraConfig).filter(v -> !v.isEmpty());
        if (id.isPresent() != secret.isPresent()) {
            throw new IllegalArgumentException("extra_config sets " + (id.isPresent() ? "aws_access_key_id" : "aws_secret_access_key")
                    + " without " + (id.isPresent() ? "aws_secret_access_key" : "aws_access_key_id")
                    + "; set both, or neither to use the AWS credentials chain");
        }
        int cores = Runtime.getRuntime().availableProcessors();
        return new S3Settings(location.region().or(() -> ExtraConfigKeys.S3_REGION.valueIn(extraConfig)),
                Math.min(ExtraConfigKeys.S3_NUM_IO_THREADS.valueOrDefault(extraConfig), 2 * cores),
                ExtraConfigKeys.S3_MAX_INFLIGHT_REQS.valueOrDefault(extraConfig),
                ExtraConfigKeys.S3_PART_SIZE.valueOrDefault(extraConfig),
                !location.disableTls().orElseGet(() -> ExtraConfigKeys.DISABLE_TLS.valueOrDefault(extraConfig)),
                id, secret);
    }

    @Override
    public String toString() {
        return "S3Settings[region " + region.orElse("(SDK chain)") + ", " + ioThreads + " I/O threads, " + maxInFlight
                + " in flight, part size " + partSize + ", " + (tls ? "https" : "http") + ", credentials "
                + (accessKeyId.isPresent() ? "from extra_config" : "from the AWS chain") + "]";
    }
}
