package lmcache4j.bench.demo.cluster;

import java.nio.file.Path;
import java.util.Objects;

import lmcache4j.bench.demo.ServingSimulator.Settings;

/**
 * The multi-instance demo's knobs.
 *
 * @param instances serving instances, each a process with its own CPU and disk tier
 * @param requests  requests played for each policy (the same workload each time)
 * @param cpuGb     each instance's CPU tier, GiB
 * @param diskGb    each instance's disk tier, GiB
 * @param layers    the model's layers
 * @param seed      the workload's seed
 * @param workDir   where the instances' disk tiers and logs go (the caller deletes it)
 * @param insecure  the controller and the instances' control sockets without CURVE (the controller's
 *                  {@code --insecure}, for LMCache's Python workers); P2P keeps a token of its own
 */
public record ClusterSettings(int instances, int requests, double cpuGb, double diskGb, int layers, long seed, Path workDir,
                              boolean insecure) {
    /** Instances when {@code --instances} is given without a number. */
    public static final int DEFAULT_INSTANCES = 3;
    /** The most instances: each is a JVM with its own tiers on this machine. */
    public static final int MAX_INSTANCES = 16;

    public ClusterSettings {
        if (instances < 2 || instances > MAX_INSTANCES) {
            throw new IllegalArgumentException("--instances needs 2 to " + MAX_INSTANCES + " instances, got " + instances);
        }
        Objects.requireNonNull(workDir, "workDir");
        // The single-instance checks (a CPU tier and a disk tier that hold a chunk) apply to each instance.
        new Settings(requests, cpuGb, layers, Settings.DEFAULT_KV_HEADS, Settings.DEFAULT_HEAD_SIZE, Settings.DEFAULT_BLOCK_SIZE,
                Settings.DEFAULT_CHUNK_SIZE, seed, lmcache4j.bench.demo.Workload.Shape.defaults(seed), workDir, diskGb, null, null);
    }
}
