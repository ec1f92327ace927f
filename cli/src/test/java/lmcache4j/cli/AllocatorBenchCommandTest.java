package lmcache4j.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

import org.junit.jupiter.api.Test;

/** {@code ./lmcache4j bench allocator} on a short trace: its JSON, its table and its usage errors; no timing assertions. */
class AllocatorBenchCommandTest {
    private record Run(int exit, String out, String err) {
    }

    private static Run run(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int exit = BenchCommand.allocator(args, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Run(exit, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    private static final String[] SHORT = {"--ops", "3000", "--runs", "1", "--warmup", "0", "--pool-mib", "256"};

    private static String[] shortRun(String... more) {
        String[] args = java.util.Arrays.copyOf(SHORT, SHORT.length + more.length);
        System.arraycopy(more, 0, args, SHORT.length, more.length);
        return args;
    }

    @Test
    void jsonHasEachAllocatorsFigureTheTargetsAndTheFragmentation() {
        Run r = run(shortRun("--json", "--seed", "7"));
        assertEquals(0, r.exit(), r.err());
        String json = r.out().strip();
        assertTrue(json.startsWith("{") && json.endsWith("}") && json.lines().count() == 1, json);
        for (String kind : new String[] {"tensor", "paged", "netty", "malloc"}) {
            assertTrue(json.matches("(?s).*\"" + kind + "_ns_per_pair\": [0-9]+\\.[0-9]+.*"), kind + " measured: " + json);
        }
        assertTrue(json.contains("\"tensor_target_ns\": 200") && json.contains("\"paged_target_ns\": 50"), json);
        assertTrue(json.matches("(?s).*\"tensor_meets_target\": (true|false).*"), json);
        assertTrue(json.matches("(?s).*\"fragments_max\": [0-9]+.*"), json);
        assertTrue(json.contains("\"ops\": 3000") && json.contains("\"runs\": 1") && json.contains("\"seed\": 7")
                && json.contains("\"pool_bytes\": 268435456"), json);
        assertTrue(json.contains("\"allocators\": {\"tensor\": {"), json);
    }

    @Test
    void onlyRunsTheNamedAllocatorsAndTheTableSaysHowEachDid() {
        Run r = run(shortRun("--only", "paged,tensor"));
        assertEquals(0, r.exit(), r.err());
        String table = r.out();
        assertTrue(table.startsWith("== lmcache4j allocator benchmark =="), table);
        assertTrue(table.contains("TensorMemoryAllocator") && table.contains("PagedTensorMemoryAllocator"), table);
        assertTrue(!table.contains("Netty pooled direct") && !table.contains("malloc/free via FFM"), "--only: " + table);
        assertTrue(table.contains("<= 200") && table.contains("<= 50"), table);
        assertTrue(table.lines().filter(l -> l.startsWith("TensorMemoryAllocator") || l.startsWith("PagedTensorMemoryAllocator"))
                .allMatch(l -> l.contains(" met ") || l.contains(" missed ")), table);
    }

    @Test
    void badOptionsExitWith2AndHelpWith0() {
        Run unknown = run("--fast");
        assertEquals(2, unknown.exit());
        assertTrue(unknown.err().contains("unknown option '--fast'") && unknown.err().contains("./lmcache4j bench allocator --help")
                        && unknown.err().strip().lines().count() == 1,
                unknown.err());
        assertEquals(2, run("--runs", "0").exit());
        assertEquals(2, run("--ops").exit());
        assertEquals(2, run("--pool-mib", "1").exit());
        Run only = run("--only", "tensor,jemalloc");
        assertEquals(2, only.exit());
        assertTrue(only.err().contains("--only"), only.err());
        assertEquals("", only.out());
        Run help = run("--help");
        assertEquals(0, help.exit());
        assertTrue(help.out().startsWith("usage: ./lmcache4j bench allocator"), help.out());
    }
}
