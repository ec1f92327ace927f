package lmcache4j.server.mp;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;

/**
 * The MP server's lower tiers (L2) behind its shared-memory pool: a local disk directory and a
 * remote store, the engine's own tiers. Off ({@link #NONE}) unless one of them is set.
 *
 * @param diskDir         the disk tier's directory ({@code --l2-disk}), or none
 * @param diskBytes       the disk tier's capacity ({@code --l2-disk-size})
 * @param remoteUrl       the remote store ({@code --l2-remote}: {@code lm://}, {@code redis://}, {@code fs://}, ...), or none
 * @param stagingBytes    host memory the tiers copy through (never the shared pool), half for writes and
 *                        half for loads: bounds what writes and loads hold at once
 * @param writeQueue      published chunks that may wait for the writer; more are dropped and counted
 * @param prefetchTimeout the longest a lookup's load from the tiers runs; what is not loaded by then is a miss
 */
public record MpL2Settings(Optional<Path> diskDir, long diskBytes, Optional<String> remoteUrl, long stagingBytes,
                           int writeQueue, Duration prefetchTimeout) {
    /** No lower tier: the pool is the only one. */
    public static final MpL2Settings NONE = new MpL2Settings(Optional.empty(), 1L << 30, Optional.empty(), 256L << 20, 1024,
            Duration.ofSeconds(30));

    /** Half of staging is for writes, half for loads: each must hold something. */
    public static final long MIN_STAGING_BYTES = 2L << 20;

    public MpL2Settings {
        Objects.requireNonNull(diskDir, "diskDir");
        Objects.requireNonNull(remoteUrl, "remoteUrl");
        Objects.requireNonNull(prefetchTimeout, "prefetchTimeout");
        if (diskBytes < 1 || stagingBytes < MIN_STAGING_BYTES || writeQueue < 1 || prefetchTimeout.isNegative() || prefetchTimeout.isZero()) {
            throw new IllegalArgumentException("L2 disk size, write queue and prefetch timeout must be positive, staging at"
                    + " least 2 MiB;"
                    + " got " + diskBytes + ", " + stagingBytes + ", " + writeQueue + ", " + prefetchTimeout);
        }
    }

    /** Whether any lower tier is configured. */
    public boolean enabled() {
        return diskDir.isPresent() || remoteUrl.isPresent();
    }

    public MpL2Settings withDisk(Path dir, long bytes) {
        return new MpL2Settings(Optional.of(dir), bytes, remoteUrl, stagingBytes, writeQueue, prefetchTimeout);
    }

    public MpL2Settings withRemote(String url) {
        return new MpL2Settings(diskDir, diskBytes, Optional.of(url), stagingBytes, writeQueue, prefetchTimeout);
    }

    public MpL2Settings withStaging(long bytes, int queue) {
        return new MpL2Settings(diskDir, diskBytes, remoteUrl, bytes, queue, prefetchTimeout);
    }

    public MpL2Settings withPrefetchTimeout(Duration timeout) {
        return new MpL2Settings(diskDir, diskBytes, remoteUrl, stagingBytes, writeQueue, timeout);
    }
}
