package lmcache4j.allocator.host;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * The machine's NUMA nodes, read from {@code /sys/devices/system/node}: which CPUs and how much
 * memory each has, and the distances between them. A kernel without NUMA support (no such
 * directory) is reported as one node holding every CPU, which is how memory behaves there.
 *
 * @param nodes the nodes in ascending id order; never empty
 */
public record NumaTopology(List<Node> nodes) {
    private static final Path SYSFS_NODES = Path.of("/sys/devices/system/node");

    /**
     * One NUMA node.
     *
     * @param id          the node id (the {@code N} of {@code nodeN})
     * @param cpus        the CPUs of the node
     * @param memoryTotal bytes of memory on the node, or -1 when the kernel does not say
     * @param memoryFree  bytes of that memory free at the time of reading, or -1
     * @param distances   the node's distance to each node, indexed like {@link NumaTopology#nodes()}
     */
    public record Node(int id, List<Integer> cpus, long memoryTotal, long memoryFree, List<Integer> distances) {
        public Node {
            cpus = List.copyOf(cpus);
            distances = List.copyOf(distances);
        }
    }

    public NumaTopology {
        if (nodes.isEmpty()) {
            throw new IllegalArgumentException("a NUMA topology has at least one node");
        }
        nodes = List.copyOf(nodes);
    }

    /** The topology of this machine. */
    public static NumaTopology read() {
        return read(SYSFS_NODES);
    }

    /** The topology described by a {@code /sys/devices/system/node}-shaped directory. */
    public static NumaTopology read(Path sysfsNodeDir) {
        if (!Files.isDirectory(sysfsNodeDir)) {
            int cpus = Runtime.getRuntime().availableProcessors();
            List<Integer> all = new ArrayList<>();
            for (int i = 0; i < cpus; i++) {
                all.add(i);
            }
            return new NumaTopology(List.of(new Node(0, all, -1, -1, List.of(10))));
        }
        List<Node> nodes = new ArrayList<>();
        try (Stream<Path> entries = Files.list(sysfsNodeDir)) {
            List<Path> nodeDirs = entries
                    .filter(p -> p.getFileName().toString().matches("node\\d+"))
                    .sorted(Comparator.comparingInt(NumaTopology::nodeId))
                    .toList();
            for (Path dir : nodeDirs) {
                nodes.add(readNode(dir));
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read NUMA topology from " + sysfsNodeDir, e);
        }
        if (nodes.isEmpty()) {
            throw new IllegalStateException(sysfsNodeDir + " lists no nodeN directory");
        }
        return new NumaTopology(nodes);
    }

    /** The node with this id, if the machine has it. */
    public Optional<Node> node(int id) {
        return nodes.stream().filter(n -> n.id() == id).findFirst();
    }

    /** Whether memory placement matters here: more than one node. */
    public boolean isNuma() {
        return nodes.size() > 1;
    }

    private static int nodeId(Path dir) {
        return Integer.parseInt(dir.getFileName().toString().substring("node".length()));
    }

    private static Node readNode(Path dir) throws IOException {
        int id = nodeId(dir);
        Path cpulist = dir.resolve("cpulist");
        List<Integer> cpus = Files.isReadable(cpulist) ? CpuList.parse(Files.readString(cpulist)) : List.of();
        long total = -1;
        long free = -1;
        Path meminfo = dir.resolve("meminfo");
        if (Files.isReadable(meminfo)) {
            for (String line : Files.readAllLines(meminfo)) {
                // "Node 0 MemTotal:        4548384 kB"
                String[] f = line.trim().split("\\s+");
                if (f.length >= 4 && f[3].matches("\\d+")) {
                    long bytes = Long.parseLong(f[3]) * (f.length > 4 && f[4].equalsIgnoreCase("kB") ? 1024 : 1);
                    if (f[2].equals("MemTotal:")) {
                        total = bytes;
                    } else if (f[2].equals("MemFree:")) {
                        free = bytes;
                    }
                }
            }
        }
        List<Integer> distances = new ArrayList<>();
        Path distance = dir.resolve("distance");
        if (Files.isReadable(distance)) {
            for (String d : Files.readString(distance).trim().split("\\s+")) {
                if (!d.isEmpty()) {
                    distances.add(Integer.parseInt(d));
                }
            }
        }
        return new Node(id, cpus, total, free, distances);
    }
}
