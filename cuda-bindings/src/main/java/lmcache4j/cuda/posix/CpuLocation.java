package lmcache4j.cuda.posix;

/**
 * Where the calling thread ran at the moment of a {@code getcpu(2)} call.
 *
 * @param cpu  the CPU number
 * @param node the NUMA node of that CPU
 */
public record CpuLocation(int cpu, int node) {
}
