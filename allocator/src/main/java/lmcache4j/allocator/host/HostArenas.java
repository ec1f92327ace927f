package lmcache4j.allocator.host;

import java.lang.System.Logger.Level;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;

import lmcache4j.allocator.HostArenaOptions;
import lmcache4j.cuda.CudaRuntime;
import lmcache4j.cuda.HostAllocFlags;
import lmcache4j.cuda.HostRegisterFlags;
import lmcache4j.cuda.HostRegistration;
import lmcache4j.cuda.posix.AnonymousMapping;
import lmcache4j.cuda.posix.Posix;
import lmcache4j.cuda.posix.PosixException;

/**
 * Makes {@link HostArena}s. The choices, in order:
 * <ol>
 *   <li>CUDA available, pinning wanted, no NUMA node: {@code cudaHostAlloc(PORTABLE)};</li>
 *   <li>CUDA available, pinning wanted, a NUMA node: mmap, {@code mbind}, first touch, then
 *       {@code cudaHostRegister} in pieces of at most 64 GiB (LMCache's NUMA path);</li>
 *   <li>otherwise anonymous mmap with huge page advice, NUMA binding, mlock and prefault as asked.</li>
 * </ol>
 * NUMA binding is best effort: when the kernel or permissions refuse it the arena is made
 * unbound, with one warning per process. A NUMA node the machine does not have is an error, and
 * so is an mlock the memlock limit refuses (the message says how to raise {@code ulimit -l}).
 */
public final class HostArenas {
    private static final System.Logger LOG = System.getLogger(HostArenas.class.getName());
    private static final AtomicBoolean NUMA_WARNED = new AtomicBoolean();
    private static final AtomicBoolean HUGEPAGE_WARNED = new AtomicBoolean();

    private HostArenas() {
    }

    /** An arena of {@code bytes} (rounded up to whole pages) made with {@code options} and {@code cuda}. */
    public static HostArena allocate(long bytes, HostArenaOptions options, CudaRuntime cuda) {
        if (bytes <= 0) {
            throw new IllegalArgumentException("arena size must be positive, was " + bytes);
        }
        if (options.numaNode().isPresent()) {
            int node = options.numaNode().getAsInt();
            NumaTopology topology = NumaTopology.read();
            if (topology.node(node).isEmpty()) {
                throw new IllegalArgumentException("NUMA node " + node + " does not exist; this machine has nodes "
                        + topology.nodes().stream().map(NumaTopology.Node::id).toList());
            }
        }
        boolean pin = options.cudaPinned() && cuda.isAvailable();
        if (pin && options.numaNode().isEmpty()) {
            return new CudaHostAllocArena(cuda.allocatePinned(bytes, HostAllocFlags.PORTABLE));
        }
        return mapped(bytes, options, pin ? cuda : null);
    }

    private static MappedHostArena mapped(long bytes, HostArenaOptions options, CudaRuntime registerWith) {
        AnonymousMapping mapping = AnonymousMapping.map(bytes, false, false);
        List<String> applied = new ArrayList<>();
        applied.add("mmap " + formatBytes(mapping.byteSize()));
        try {
            MemorySegment memory = mapping.segment();
            if (options.hugePages()) {
                adviseHugePages(memory, applied);
            }
            if (options.numaNode().isPresent()) {
                bind(memory, options.numaNode().getAsInt(), applied);
            }
            if (options.mlock()) {
                Posix.mlock(memory); // faults every page in, under the NUMA policy set above
                applied.add("mlocked");
            } else if (options.prefault() || registerWith != null) {
                touch(memory); // first touch places the pages on the bound node before CUDA pins them
                applied.add("prefaulted");
            }
            HostRegistration registration = null;
            if (registerWith != null) {
                registration = registerWith.registerHost(memory, HostRegisterFlags.PORTABLE);
                applied.add("cudaHostRegister in " + registration.pieceCount() + " piece(s)");
            }
            return new MappedHostArena(mapping, registration, String.join(", ", applied));
        } catch (RuntimeException e) {
            mapping.close();
            throw e;
        }
    }

    private static void adviseHugePages(MemorySegment memory, List<String> applied) {
        try {
            Posix.madvise(memory, Posix.MADV_HUGEPAGE);
            applied.add("MADV_HUGEPAGE");
        } catch (PosixException e) {
            if (HUGEPAGE_WARNED.compareAndSet(false, true)) {
                LOG.log(Level.WARNING, "huge page advice refused, host arenas use base pages: " + e.getMessage());
            }
            applied.add("no huge pages (" + e.errnoName() + ")");
        }
    }

    private static void bind(MemorySegment memory, int node, List<String> applied) {
        BitSet nodes = new BitSet();
        nodes.set(node);
        try {
            Posix.mbind(memory, Posix.MPOL_BIND, nodes, 0);
            applied.add("bound to NUMA node " + node);
        } catch (PosixException e) {
            if (NUMA_WARNED.compareAndSet(false, true)) {
                LOG.log(Level.WARNING, "NUMA binding to node " + node + " refused, host arenas stay unbound: " + e.getMessage());
            }
            applied.add("not bound to NUMA node " + node + " (" + e.errnoName() + ")");
        }
    }

    private static void touch(MemorySegment memory) {
        long page = Posix.pageSize();
        for (long offset = 0; offset < memory.byteSize(); offset += page) {
            memory.set(ValueLayout.JAVA_BYTE, offset, (byte) 0);
        }
    }

    /** {@code 1073741824} as {@code "1.0 GiB"}. */
    public static String formatBytes(long bytes) {
        if (bytes < 1024) {
            return bytes + " B";
        }
        String[] units = {"KiB", "MiB", "GiB", "TiB"};
        double value = bytes;
        int unit = -1;
        while (value >= 1024 && unit < units.length - 1) {
            value /= 1024;
            unit++;
        }
        return String.format("%.1f %s", value, units[unit]);
    }
}
