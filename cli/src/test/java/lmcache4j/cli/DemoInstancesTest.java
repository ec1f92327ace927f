package lmcache4j.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import lmcache4j.engine.json.Json;

/**
 * {@code ./lmcache4j demo --instances N}: a controller in this process, N engine processes, the
 * workload played under three policies with every byte verified; KV-aware routing must beat round
 * robin and round robin with P2P must fetch from peers. An instance killed mid-run fails the demo
 * with its name, and options that make no sense with many instances are usage errors.
 */
@Timeout(300)
class DemoInstancesTest {
    private static final String[] SMALL = {"--requests", "36", "--layers", "2", "--cpu-gb", "0.07", "--disk-gb", "0.1",
            "--seed", "11", "--quiet"};

    private record Run(int exit, String out, String err) {
    }

    private static Run run(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int exit = DemoCommand.run(args, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Run(exit, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    private static String[] with(String... more) {
        String[] args = java.util.Arrays.copyOf(SMALL, SMALL.length + more.length);
        System.arraycopy(more, 0, args, SMALL.length, more.length);
        return args;
    }

    @Test
    void threeInstancesThreePoliciesEveryByteVerifiedAndKvAwareRoutingWins() {
        Run r = run(with("--instances", "--json")); // no value: 3
        assertEquals(0, r.exit(), r.err() + r.out());
        Map<String, Object> report = Json.parseObject(r.out().trim());
        assertEquals(3L, report.get("instances"));
        double rr = ((Number) report.get("round_robin_hit_rate")).doubleValue();
        double kv = ((Number) report.get("kv_aware_hit_rate")).doubleValue();
        assertTrue(kv > rr, "KV-aware " + kv + " beats round robin " + rr);
        assertTrue(((Number) report.get("p2p_chunks")).longValue() > 0, r.out());
        assertEquals(0L, report.get("mismatching_bytes"));
        assertTrue(((Number) report.get("verified_bytes")).longValue() > 0, r.out());
        assertEquals(true, report.get("passed"));
        List<?> policies = (List<?>) report.get("policies");
        assertEquals(List.of("round_robin", "round_robin_p2p", "kv_aware_p2p"),
                policies.stream().map(p -> ((Map<?, ?>) p).get("policy")).toList());
        for (Object p : policies) {
            Map<?, ?> policy = (Map<?, ?>) p;
            List<?> instances = (List<?>) policy.get("per_instance");
            assertEquals(3, instances.size());
            long requests = 0;
            long reused = 0;
            for (Object i : instances) {
                Map<?, ?> instance = (Map<?, ?>) i;
                assertEquals("closed", instance.get("ended"), "every instance closed with no leak: " + instance);
                requests += ((Number) instance.get("requests")).longValue();
                reused += ((Number) instance.get("reused_tokens")).longValue();
            }
            assertEquals(36, requests, "every request went to one instance");
            assertEquals(((Number) policy.get("reused_tokens")).longValue(), reused, "the total is the instances' sum");
        }
        Map<?, ?> roundRobin = (Map<?, ?>) policies.get(0);
        assertEquals(0L, roundRobin.get("p2p_chunks"), "without P2P nothing comes from a peer");
        Map<?, ?> roundRobinP2p = (Map<?, ?>) policies.get(1);
        assertTrue(((Number) roundRobinP2p.get("p2p_chunks")).longValue() > 0, "round robin with P2P fetched from peers");
    }

    /** The control plane as LMCache's Python workers need it, without CURVE: P2P still fetches, with its own token. */
    @Test
    void withAnInsecureControlPlanePeersStillProveTheirToken() {
        Run r = run(with("--instances", "2", "--insecure", "--json"));
        assertEquals(0, r.exit(), r.err() + r.out());
        Map<String, Object> report = Json.parseObject(r.out().trim());
        assertEquals("insecure", report.get("control_plane"));
        assertTrue(((Number) report.get("p2p_chunks")).longValue() > 0, "peers served each other: " + r.out());
        assertEquals(0L, report.get("mismatching_bytes"));
        assertEquals(true, report.get("passed"));
    }

    @Test
    void anInstanceKilledMidRunFailsTheDemoNamingIt() throws Exception {
        CompletableFuture<Run> demo = CompletableFuture.supplyAsync(() -> run(with("--instances", "2", "--requests", "400")));
        ProcessHandle victim = null;
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
        while (victim == null && !demo.isDone() && System.nanoTime() < deadline) {
            victim = ProcessHandle.current().children()
                    .filter(p -> p.info().commandLine().orElse("").contains("InstanceMain"))
                    .findFirst().orElse(null);
            Thread.sleep(50);
        }
        assertTrue(victim != null, "an instance process started: " + (demo.isDone() ? demo.join() : ""));
        Thread.sleep(4_000); // into the run
        victim.destroyForcibly();
        Run r = demo.get(200, TimeUnit.SECONDS);
        assertEquals(1, r.exit(), r.out() + r.err());
        assertTrue(r.err().contains("instance instance-"), r.err());
        assertTrue(ProcessHandle.current().children().noneMatch(p -> p.isAlive()
                && p.info().commandLine().orElse("").contains("InstanceMain")), "no instance process is left behind");
    }

    @Test
    void optionsThatMakeNoSenseWithManyInstancesAreUsageErrors() {
        for (String[] bad : List.of(new String[] {"--instances", "1"}, new String[] {"--instances", "17"},
                new String[] {"--instances", "x"}, new String[] {"--instances", "3", "--remote", "lm://127.0.0.1:1"},
                new String[] {"--instances", "3", "--no-disk"}, new String[] {"--instances", "3", "--hold", "5"},
                new String[] {"--insecure"})) {
            Run r = run(with(bad));
            assertEquals(2, r.exit(), String.join(" ", bad) + ": " + r.err());
            assertTrue(r.err().startsWith("lmcache4j demo: "), r.err());
            assertEquals(1, r.err().strip().lines().count(), r.err());
        }
    }
}
