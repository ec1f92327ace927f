package lmcache4j.cli;

import java.io.PrintStream;
import java.util.List;
import java.util.stream.Collectors;

import lmcache4j.allocator.host.HugePageSupport;
import lmcache4j.allocator.host.NumaTopology;
import lmcache4j.cuda.CudaRuntime;
import lmcache4j.cuda.CudaStatus;
import lmcache4j.cuda.posix.CpuLocation;
import lmcache4j.cuda.posix.Posix;
import lmcache4j.cuda.posix.ResourceLimit;
import lmcache4j.engine.remote.lm.PayloadTag;

/**
 * What this machine offers lmcache4j: the JDK, the CUDA runtime (or why it is unavailable), the
 * NUMA nodes, huge page support, the memlock limit that bounds pinned memory without CUDA, and the
 * payload tag this JVM computes fastest.
 * Each fact is read live; a fact that cannot be read is printed as such, never guessed.
 */
public final class MachineReport {
    private MachineReport() {
    }

    /** Prints the report to {@code out}. */
    public static void print(PrintStream out) {
        out.println("== machine report ==");
        Runtime.Version v = Runtime.version();
        out.printf("JDK            %s (%s) at %s%n", v, System.getProperty("java.vm.vendor"), System.getProperty("java.home"));
        out.printf("CPUs           %d available to the JVM; page size %d bytes%n",
                Runtime.getRuntime().availableProcessors(), Posix.pageSize());
        out.printf("CUDA runtime   %s%n", describe(CudaRuntime.load()));
        out.printf("NUMA           %s%n", numa());
        out.printf("hugepages      %s%n", hugePages());
        out.printf("memlock        %s%n", memlock());
        out.printf("payload tags   %s%n", payloadTags());
    }

    /** The tag this JVM offers in keyed handshakes (lm://, P2P, PD), and why. */
    static String payloadTags() {
        try {
            PayloadTag.Algorithm a = PayloadTag.Algorithm.preferred();
            String why = System.getProperty(PayloadTag.PREFERENCE_PROPERTY) != null
                    ? "set by -D" + PayloadTag.PREFERENCE_PROPERTY
                    : a == PayloadTag.Algorithm.POLY1305 ? "this JVM computes Poly1305 with its intrinsic"
                    : "this JVM computes Poly1305 without its intrinsic: x86-64 without AVX-512 IFMA, or UseAVX below 3";
            return a + " preferred in keyed handshakes (" + why + ")";
        } catch (IllegalArgumentException e) {
            return e.getMessage();
        }
    }

    /** The CPU's model name from /proc/cpuinfo (the first processor's), or why it cannot be read. */
    static String cpuModel() {
        try (var lines = java.nio.file.Files.lines(java.nio.file.Path.of("/proc/cpuinfo"))) {
            return lines.filter(l -> l.startsWith("model name")).map(l -> l.substring(l.indexOf(':') + 1).strip())
                    .findFirst().orElse("CPU model unknown (no model name in /proc/cpuinfo)");
        } catch (java.io.IOException | java.io.UncheckedIOException e) {
            return "CPU model unknown (/proc/cpuinfo: " + e.getMessage() + ")";
        }
    }

    static String describe(CudaRuntime runtime) {
        return switch (runtime.status()) {
            case CudaStatus.Available a -> a.toString();
            case CudaStatus.Unavailable u -> u + u.library().map(p -> " [library " + p
                    + u.runtimeVersion().stream().mapToObj(r -> ", runtime " + (r / 1000) + "." + (r % 1000) / 10)
                    .collect(Collectors.joining()) + "]").orElse("")
                    + "; host memory will be anonymous mmap, not CUDA-pinned";
        };
    }

    private static String numa() {
        try {
            NumaTopology topology = NumaTopology.read();
            CpuLocation here = Posix.getcpu();
            String nodes = topology.nodes().stream()
                    .map(n -> "node" + n.id() + " cpus " + ranges(n.cpus())
                            + (n.memoryTotal() >= 0 ? ", " + gib(n.memoryTotal()) + " (" + gib(n.memoryFree()) + " free)" : ""))
                    .collect(Collectors.joining("; "));
            return topology.nodes().size() + " node(s): " + nodes + "; this thread on cpu " + here.cpu()
                    + " node " + here.node() + (topology.isNuma() ? "" : " (single node: NUMA binding has no effect)");
        } catch (RuntimeException e) {
            return "unreadable: " + e.getMessage();
        }
    }

    private static String hugePages() {
        HugePageSupport h = HugePageSupport.read();
        String pools = h.pools().isEmpty() ? "no hugetlbfs pools"
                : h.pools().stream().map(p -> (p.pageSize() >> 10) + " kB pages: " + p.free() + " free of " + p.total())
                .collect(Collectors.joining(", "));
        return "transparent hugepages '" + h.transparentMode() + "'"
                + (h.transparentHugePagesOnAdvice() ? " (MADV_HUGEPAGE gives 2 MiB pages)" : " (MADV_HUGEPAGE has no effect)")
                + "; " + pools;
    }

    private static String memlock() {
        try {
            ResourceLimit limit = Posix.memlockLimit();
            return limit + (limit.soft() == ResourceLimit.UNLIMITED ? ""
                    : " (mlock of larger arenas will be refused: raise with `ulimit -l unlimited`)");
        } catch (RuntimeException e) {
            return "unreadable: " + e.getMessage();
        }
    }

    private static String gib(long bytes) {
        return String.format("%.1f GiB", bytes / (double) (1L << 30));
    }

    static String ranges(List<Integer> cpus) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < cpus.size(); i++) {
            int start = cpus.get(i);
            int end = start;
            while (i + 1 < cpus.size() && cpus.get(i + 1) == end + 1) {
                end = cpus.get(++i);
            }
            if (!sb.isEmpty()) {
                sb.append(',');
            }
            sb.append(start == end ? String.valueOf(start) : start + "-" + end);
        }
        return sb.isEmpty() ? "none" : sb.toString();
    }
}
