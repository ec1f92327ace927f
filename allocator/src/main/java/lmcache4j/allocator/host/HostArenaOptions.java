package lmcache4j.allocator.host;

import java.util.OptionalInt;

/**
 * How a {@link HostArena} is made.
 *
 * @param cudaPinned pin the memory with CUDA when the runtime is available (DMA-capable for
 *                   device copies); ignored where CUDA is unavailable
 * @param numaNode   bind the memory to this NUMA node ({@code mbind(MPOL_BIND)}), or none
 * @param hugePages  advise 2 MiB transparent huge pages ({@code MADV_HUGEPAGE}) for mmap memory
 * @param mlock      lock the memory in RAM ({@code mlock}); refused beyond {@code ulimit -l}
 * @param prefault   touch every page now, so that first use does not pay the page faults
 */
public record HostArenaOptions(boolean cudaPinned, OptionalInt numaNode, boolean hugePages, boolean mlock,
                               boolean prefault) {

    /** CUDA-pinned when possible, huge page advice, no NUMA binding, no mlock, lazy faults. */
    public static final HostArenaOptions DEFAULT = new HostArenaOptions(true, OptionalInt.empty(), true, false, false);

    public HostArenaOptions {
        if (numaNode.isPresent() && numaNode.getAsInt() < 0) {
            throw new IllegalArgumentException("NUMA node must be >= 0, was " + numaNode.getAsInt());
        }
    }

    public HostArenaOptions withCudaPinned(boolean value) {
        return new HostArenaOptions(value, numaNode, hugePages, mlock, prefault);
    }

    public HostArenaOptions withNumaNode(int node) {
        return new HostArenaOptions(cudaPinned, OptionalInt.of(node), hugePages, mlock, prefault);
    }

    public HostArenaOptions withHugePages(boolean value) {
        return new HostArenaOptions(cudaPinned, numaNode, value, mlock, prefault);
    }

    public HostArenaOptions withMlock(boolean value) {
        return new HostArenaOptions(cudaPinned, numaNode, hugePages, value, prefault);
    }

    public HostArenaOptions withPrefault(boolean value) {
        return new HostArenaOptions(cudaPinned, numaNode, hugePages, mlock, value);
    }
}
