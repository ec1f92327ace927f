package lmcache4j.bench.demo.cluster;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

import lmcache4j.engine.json.Json;

/**
 * What the multi-instance demo measured: for each policy, each instance's requests, hit rate, chunks
 * fetched from peers and served to them, prefetch hits, bytes verified and mismatches, and how its
 * process ended; then the verdict. The verdict fails on any wrong byte, any retrieve short of its
 * lookup, any instance that leaked or did not close, round robin with P2P whose peers never served a
 * chunk (KV-aware routing may rightly need none), and KV-aware routing that did not beat round robin.
 */
public record ClusterReport(ClusterSettings settings, List<PolicyRun> runs) {
    /**
     * One instance under one policy.
     *
     * @param instanceId its id
     * @param routed     requests routed to it
     * @param stats      what it reported ({@link InstanceMain}'s stats line)
     * @param ending     how its process ended (null until it has)
     */
    public record InstanceRun(String instanceId, int routed, Map<String, Object> stats, InstanceEnding ending) {
        InstanceRun(String instanceId, int routed, Map<String, Object> stats) {
            this(instanceId, routed, stats, null);
        }

        InstanceRun withEnding(InstanceEnding e) {
            return new InstanceRun(instanceId, routed, stats, e);
        }

        long count(String key) {
            return stats.get(key) instanceof Number v ? v.longValue() : 0;
        }

        double hitRate() {
            long prompt = count("prompt_tokens");
            return prompt == 0 ? 0 : count("reused_tokens") / (double) prompt;
        }
    }

    /**
     * One policy's run.
     *
     * @param policy          the policy
     * @param instances       every instance
     * @param routedToPrefix  requests the router sent where the controller saw a cached prefix (KV-aware only)
     * @param wallNanos       time to play the workload
     * @param routerFailures  routes chosen without the controller (it could not be asked)
     */
    public record PolicyRun(Policy policy, List<InstanceRun> instances, long routedToPrefix, long wallNanos,
                            long routerFailures) {
        long sum(String key) {
            return instances.stream().mapToLong(i -> i.count(key)).sum();
        }

        public double hitRate() {
            long prompt = sum("prompt_tokens");
            return prompt == 0 ? 0 : sum("reused_tokens") / (double) prompt;
        }
    }

    private PolicyRun run(Policy p) {
        return runs.stream().filter(r -> r.policy() == p).findFirst().orElseThrow();
    }

    /** Why the run failed; empty when it passed. */
    public List<String> failures() {
        List<String> out = new ArrayList<>();
        for (PolicyRun r : runs) {
            String name = r.policy().title();
            if (r.sum("mismatching_bytes") > 0) {
                out.add(name + ": " + r.sum("mismatching_bytes") + " retrieved bytes differ from the model's KV");
            }
            if (r.sum("shortfalls") > 0) {
                out.add(name + ": " + r.sum("shortfalls") + " retrieves loaded less than their lookup promised");
            }
            if (r.sum("mask_holes") > 0) {
                out.add(name + ": " + r.sum("mask_holes") + " retrieve masks had holes");
            }
            for (InstanceRun i : r.instances()) {
                if (i.ending() != InstanceEnding.CLOSED) {
                    out.add(name + ": instance " + i.instanceId() + " ended " + i.ending()
                            + (i.ending() == InstanceEnding.LEAK ? " (its allocator found objects never freed)" : ""));
                }
                if (!Boolean.TRUE.equals(i.stats().get("controller_registered"))) {
                    out.add(name + ": instance " + i.instanceId() + " was not registered with the controller at the end");
                }
                if (i.stats().get("problems") instanceof List<?> problems && !problems.isEmpty()) {
                    out.add(name + ": " + i.instanceId() + ": " + problems.get(0));
                }
            }
        }
        // KV-aware routing may rightly need no peer (each prompt goes where its KV is); round robin with P2P must.
        if (run(Policy.ROUND_ROBIN_P2P).sum("p2p_chunks") == 0) {
            out.add(Policy.ROUND_ROBIN_P2P.title() + ": no chunk was fetched from a peer: the P2P tier never worked");
        }
        double rr = run(Policy.ROUND_ROBIN).hitRate();
        double kv = run(Policy.KV_AWARE_P2P).hitRate();
        if (!(kv > rr)) {
            out.add(String.format(Locale.ROOT, "KV-aware routing's hit rate %.1f%% is not above round robin's %.1f%%",
                    100 * kv, 100 * rr));
        }
        return out;
    }

    public boolean passed() {
        return failures().isEmpty();
    }

    public String json() {
        Map<String, Object> top = new LinkedHashMap<>();
        top.put("instances", (long) settings.instances());
        top.put("requests", (long) settings.requests());
        top.put("cpu_gb_per_instance", settings.cpuGb());
        top.put("disk_gb_per_instance", settings.diskGb());
        top.put("layers", (long) settings.layers());
        top.put("seed", settings.seed());
        top.put("control_plane", settings.insecure() ? "insecure" : "curve");
        top.put("round_robin_hit_rate", Json.fixed(run(Policy.ROUND_ROBIN).hitRate(), 4));
        top.put("round_robin_p2p_hit_rate", Json.fixed(run(Policy.ROUND_ROBIN_P2P).hitRate(), 4));
        top.put("kv_aware_hit_rate", Json.fixed(run(Policy.KV_AWARE_P2P).hitRate(), 4));
        top.put("p2p_chunks", runs.stream().mapToLong(r -> r.sum("p2p_chunks")).sum());
        top.put("prefetch_hits", runs.stream().mapToLong(r -> r.sum("prefetch_hits")).sum());
        top.put("verified_bytes", runs.stream().mapToLong(r -> r.sum("verified_bytes")).sum());
        top.put("mismatching_bytes", runs.stream().mapToLong(r -> r.sum("mismatching_bytes")).sum());
        List<Object> policies = new ArrayList<>();
        for (PolicyRun r : runs) {
            Map<String, Object> p = new LinkedHashMap<>();
            p.put("policy", r.policy().key());
            p.put("hit_rate", Json.fixed(r.hitRate(), 4));
            for (String key : List.of("prompt_tokens", "reused_tokens", "p2p_chunks", "p2p_bytes", "prefetch_hits",
                    "prefetch_lower_tier_chunks", "disk_reads", "verified_bytes", "mismatching_bytes", "shortfalls")) {
                p.put(key, r.sum(key));
            }
            if (r.policy().kvAware()) {
                p.put("routed_to_cached_prefix", r.routedToPrefix());
                p.put("router_lookup_failures", r.routerFailures());
            }
            p.put("seconds", Json.fixed(r.wallNanos() / 1e9, 2));
            List<Object> instances = new ArrayList<>();
            for (InstanceRun i : r.instances()) {
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("instance", i.instanceId());
                m.put("requests", (long) i.routed());
                m.put("hit_rate", Json.fixed(i.hitRate(), 4));
                for (String key : List.of("prompt_tokens", "reused_tokens", "p2p_chunks", "served_to_peers", "prefetch_hits",
                        "disk_reads", "cpu_evictions", "verified_bytes", "mismatching_bytes", "prefetches_expired")) {
                    m.put(key, i.count(key));
                }
                m.put("ended", String.valueOf(i.ending()).toLowerCase(Locale.ROOT));
                instances.add(m);
            }
            p.put("per_instance", instances);
            policies.add(p);
        }
        top.put("policies", policies);
        top.put("passed", passed());
        top.put("failures", failures());
        return Json.write(top);
    }

    public String text() {
        StringBuilder sb = new StringBuilder();
        sb.append(String.format(Locale.ROOT, "%d instances, %d requests a policy (the same workload, seed %d), each instance "
                        + "%.2f GiB CPU tier + %.2f GiB disk tier, %d layers%n", settings.instances(), settings.requests(),
                settings.seed(), settings.cpuGb(), settings.diskGb(), settings.layers()));
        sb.append(settings.insecure() ? "control plane without CURVE (--insecure); P2P authenticated with a token of its own"
                : "control plane on CURVE with the deployment secret; P2P authenticated with the token it derives")
                .append(System.lineSeparator()).append(System.lineSeparator());
        for (PolicyRun r : runs) {
            sb.append(String.format(Locale.ROOT, "== %s: hit rate %.1f%% (%,d of %,d prompt tokens reused), %,d chunks "
                            + "fetched from peers, %,d prefetch hits, %.2f GiB verified, %,d wrong bytes, %.1f s%n",
                    r.policy().title(), 100 * r.hitRate(), r.sum("reused_tokens"), r.sum("prompt_tokens"), r.sum("p2p_chunks"),
                    r.sum("prefetch_hits"), r.sum("verified_bytes") / (double) (1L << 30), r.sum("mismatching_bytes"),
                    r.wallNanos() / 1e9));
            if (r.policy().kvAware()) {
                sb.append(String.format(Locale.ROOT, "   the router sent %d of %d requests where the controller saw a cached "
                        + "prefix%s%n", r.routedToPrefix(), settings.requests(),
                        r.routerFailures() > 0 ? " (" + r.routerFailures() + " routed without it: lookup failed)" : ""));
            }
            sb.append(String.format(Locale.ROOT, "   %-12s %8s %7s %10s %8s %10s %10s %9s %6s %7s%n", "instance", "requests", "hit",
                    "from peers", "to peers", "prefetched", "disk reads", "verified", "wrong", "ended"));
            for (InstanceRun i : r.instances()) {
                sb.append(String.format(Locale.ROOT, "   %-12s %8d %6.1f%% %10d %8d %10d %10d %5.2f GiB %6d %7s%n", i.instanceId(),
                        i.routed(), 100 * i.hitRate(), i.count("p2p_chunks"), i.count("served_to_peers"),
                        i.count("prefetch_hits"), i.count("disk_reads"), i.count("verified_bytes") / (double) (1L << 30),
                        i.count("mismatching_bytes"), String.valueOf(i.ending()).toLowerCase(Locale.ROOT)));
            }
            sb.append(System.lineSeparator());
        }
        sb.append(String.format(Locale.ROOT, "hit rate: round robin %.1f%%, round robin + P2P %.1f%%, KV-aware + P2P %.1f%%%n",
                100 * run(Policy.ROUND_ROBIN).hitRate(), 100 * run(Policy.ROUND_ROBIN_P2P).hitRate(),
                100 * run(Policy.KV_AWARE_P2P).hitRate()));
        List<String> failures = failures();
        sb.append(failures.isEmpty() ? "PASS: every retrieved byte matched the model" : "FAIL: " + String.join("; ", failures))
                .append(System.lineSeparator());
        return sb.toString();
    }
}
