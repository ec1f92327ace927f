package lmcache4j.engine.config;

import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/**
 * The disk tier's settings, typed, from {@code local_disk}, {@code max_local_disk_size},
 * {@code cache_policy} and the {@code extra_config} keys of {@link ExtraConfigKeys} (validated when
 * the config was loaded). Present only when both {@code local_disk} and a positive
 * {@code max_local_disk_size} are set ({@link LMCacheEngineConfig#diskTier()}).
 *
 * @param directories        {@code local_disk}: with several, worker {@code i} takes {@code i mod n}
 * @param capacityBytes      {@code max_local_disk_size} in bytes
 * @param cachePolicy        {@code cache_policy}
 * @param directIo           {@code use_odirect}
 * @param fsync              {@code local_disk.fsync}
 * @param claimNonemptyDir   {@code local_disk.claim_nonempty_dir}
 * @param ioThreads          {@code local_disk.io_threads}
 * @param maxQueuedPuts      {@code local_disk.max_queued_puts}
 * @param verifyInBackground {@code local_disk.verify_in_background}
 */
public record DiskTierSettings(List<Path> directories, long capacityBytes, String cachePolicy, boolean directIo,
                               boolean fsync, boolean claimNonemptyDir, int ioThreads, int maxQueuedPuts,
                               boolean verifyInBackground) {
    public DiskTierSettings {
        directories = List.copyOf(directories);
        if (directories.isEmpty() || capacityBytes <= 0 || ioThreads < 1 || maxQueuedPuts < 1) {
            throw new IllegalArgumentException("a disk tier needs a directory, a positive capacity, I/O threads and a "
                    + "put queue; got " + directories + ", " + capacityBytes + " bytes, " + ioThreads + " threads, "
                    + maxQueuedPuts + " queued puts");
        }
    }

    /** The directory of worker {@code workerId} ({@code local_disk_path_sharding: by_gpu}). */
    public Path directoryOf(int workerId) {
        return directories.get(workerId % directories.size());
    }

    static Optional<DiskTierSettings> from(LMCacheEngineConfig config) {
        if (config.localDiskPaths().isEmpty() || config.maxLocalDiskSizeBytes() <= 0) {
            return Optional.empty();
        }
        var extra = config.extraConfig();
        return Optional.of(new DiskTierSettings(config.localDiskPaths(), config.maxLocalDiskSizeBytes(), config.cachePolicy(),
                ExtraConfigKeys.USE_ODIRECT.valueOrDefault(extra), ExtraConfigKeys.DISK_FSYNC.valueOrDefault(extra),
                ExtraConfigKeys.DISK_CLAIM_NONEMPTY_DIR.valueOrDefault(extra),
                ExtraConfigKeys.DISK_IO_THREADS.valueOrDefault(extra), ExtraConfigKeys.DISK_MAX_QUEUED_PUTS.valueOrDefault(extra),
                ExtraConfigKeys.DISK_VERIFY_IN_BACKGROUND.valueOrDefault(extra)));
    }
}
