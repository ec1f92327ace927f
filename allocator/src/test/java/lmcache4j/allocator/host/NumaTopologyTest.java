package lmcache4j.allocator.host;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import lmcache4j.cuda.posix.Posix;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class NumaTopologyTest {
    @Test
    void readsATwoNodeSysfsTree(@TempDir Path sys) throws IOException {
        node(sys, 0, "0-3,8", "Node 0 MemTotal:       1048576 kB\nNode 0 MemFree:         524288 kB\n", "10 21");
        node(sys, 1, "4-7", "Node 1 MemTotal:       2097152 kB\nNode 1 MemFree:        2097152 kB\n", "21 10");
        Files.createDirectories(sys.resolve("power")); // not a node directory
        NumaTopology t = NumaTopology.read(sys);
        assertEquals(2, t.nodes().size());
        assertTrue(t.isNuma());
        NumaTopology.Node n0 = t.node(0).orElseThrow();
        assertEquals(List.of(0, 1, 2, 3, 8), n0.cpus());
        assertEquals(1L << 30, n0.memoryTotal());
        assertEquals(512L << 20, n0.memoryFree());
        assertEquals(List.of(10, 21), n0.distances());
        assertEquals(List.of(4, 5, 6, 7), t.node(1).orElseThrow().cpus());
        assertTrue(t.node(2).isEmpty());
    }

    @Test
    void nodesAreOrderedNumericallyNotLexically(@TempDir Path sys) throws IOException {
        for (int id : new int[] {10, 2, 1}) {
            node(sys, id, "", "", "");
        }
        assertEquals(List.of(1, 2, 10), NumaTopology.read(sys).nodes().stream().map(NumaTopology.Node::id).toList());
    }

    @Test
    void aKernelWithoutNumaIsOneNodeWithEveryCpu(@TempDir Path sys) {
        NumaTopology t = NumaTopology.read(sys.resolve("absent"));
        assertEquals(1, t.nodes().size());
        assertFalse(t.isNuma());
        assertEquals(Runtime.getRuntime().availableProcessors(), t.nodes().getFirst().cpus().size());
    }

    @Test
    void thisMachinesTopologyContainsTheNodeWeRunOn() {
        NumaTopology t = NumaTopology.read();
        int node = Posix.getcpu().node();
        assertTrue(t.node(node).isPresent(), () -> "node " + node + " missing from " + t);
    }

    @Test
    void malformedCpuListsAreRejectedWithTheText() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> CpuList.parse("0-x"));
        assertTrue(e.getMessage().contains("'0-x'"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> CpuList.parse("5-2"));
        assertEquals(List.of(), CpuList.parse("\n"));
    }

    private static void node(Path sys, int id, String cpulist, String meminfo, String distance) throws IOException {
        Path dir = Files.createDirectories(sys.resolve("node" + id));
        Files.writeString(dir.resolve("cpulist"), cpulist + "\n");
        Files.writeString(dir.resolve("meminfo"), meminfo);
        Files.writeString(dir.resolve("distance"), distance + "\n");
    }
}
