package lmcache4j.allocator;

import java.util.Objects;
import java.util.OptionalInt;

/**
 * How the host memory under an allocator is made ({@link HostMemoryAllocator#tensor},
 * {@link HostMemoryAllocator#paged}). Options the system may refuse without harm (huge pages, NUMA
 * binding) are applied best-effort and named in {@link HostMemoryAllocator#memoryDescription()};
 * an mlock the memlock limit refuses is an error.
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
        Objects.requireNonNull(numaNode, "numaNode (OptionalInt.empty() for no binding)");
        if (numaNode.isPresent() && numaNode.getAsInt() < 0) {
            throw new IllegalArgumentException("NUMA node must be >= 0, was " + numaNode.getAsInt());
        }
    }

    /** These options with CUDA pinning on or off. */
    public HostArenaOptions withCudaPinned(boolean value) {
        return new HostArenaOptions(value, numaNode, hugePages, mlock, prefault);
    }

    /** These options with the memory bound to NUMA node {@code node}. */
    public HostArenaOptions withNumaNode(int node) {
        return new HostArenaOptions(cudaPinned, OptionalInt.of(node), hugePages, mlock, prefault);
    }

    /** These options with huge page advice on or off. */
    public HostArenaOptions withHugePages(boolean value) {
        return new HostArenaOptions(cudaPinned, numaNode, value, mlock, prefault);
    }

    /** These options with the memory locked in RAM, or not. */
    public HostArenaOptions withMlock(boolean value) {
        return new HostArenaOptions(cudaPinned, numaNode, hugePages, value, prefault);
    }

    /** These options with every page touched at creation, or not. */
    public HostArenaOptions withPrefault(boolean value) {
        return new HostArenaOptions(cudaPinned, numaNode, hugePages, mlock, value);
    }
}
