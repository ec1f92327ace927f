package lmcache4j.bench.demo.cluster;

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.logging.Level;
import java.util.logging.Logger;

import lmcache4j.bench.demo.ServingSimulator;
import lmcache4j.engine.PreparedRequest;
import lmcache4j.engine.PrefetchStats;
import lmcache4j.engine.json.Json;
import lmcache4j.engine.p2p.P2pBackend;
import lmcache4j.engine.storage.disk.LocalDiskBackend;
import lmcache4j.server.lookup.LookupServer;
import lmcache4j.server.p2p.P2pTransferServer;

/**
 * The process of one serving instance in the multi-instance demo: a {@link ServingSimulator} (its
 * own paged KV cache and engine with a CPU and a disk tier) reporting to the controller, its lookup
 * server, and with P2P its transfer server. The demo process drives it over stdin/stdout, one
 * command a line, one JSON line in answer ({@link InstanceProtocol}). At end of input it closes
 * everything; the engine's allocator fails on a leaked object, which the last line and the exit
 * status (3) say.
 *
 * <p>Argument: the {@link InstanceSpec} as JSON.
 */
public final class InstanceMain {
    private InstanceMain() {
    }

    public static void main(String[] args) {
        // stdout carries the protocol; logs go to stderr (warnings only: the demo reports the facts).
        PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8);
        System.setOut(System.err);
        Logger.getLogger("lmcache4j").setLevel(Level.WARNING);
        System.exit(run(InstanceSpec.fromJson(args[0]), out));
    }

    static int run(InstanceSpec spec, PrintStream out) {
        ServingSimulator simulator = new ServingSimulator(spec.settings(), ServingSimulator.AfterRetrieve.NOTHING,
                spec::configure);
        LookupServer lookups = null;
        P2pTransferServer transfers = null;
        int status = 0;
        try {
            lookups = LookupServer.start(simulator.engine());
            if (spec.p2p()) {
                transfers = P2pTransferServer.start(simulator.engine(), simulator.engine().config().p2p().orElseThrow());
            }
            out.println(InstanceProtocol.event("ready", Map.of("peer_init_url", transfers == null ? "" : transfers.peerInitUrl())));
            serve(simulator, lookups, transfers, out);
        } catch (IOException | RuntimeException e) {
            out.println(InstanceProtocol.event("failed", Map.of("message", String.valueOf(e))));
            e.printStackTrace();
            status = 1;
        } finally {
            if (transfers != null) {
                transfers.close();
            }
            if (lookups != null) {
                lookups.close();
            }
            try {
                simulator.close(); // the allocator's leak check
                out.println(InstanceProtocol.event("closed", Map.of()));
            } catch (RuntimeException e) {
                out.println(InstanceProtocol.event("leak", Map.of("message", String.valueOf(e))));
                e.printStackTrace();
                status = 3;
            }
        }
        return status;
    }

    private static void serve(ServingSimulator simulator, LookupServer lookups, P2pTransferServer transfers, PrintStream out)
            throws IOException {
        Map<String, PreparedRequest> admitted = new HashMap<>();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8), 1 << 16);
        for (String line; (line = in.readLine()) != null && !line.equals(InstanceProtocol.EXIT); ) {
            InstanceProtocol.Command c = InstanceProtocol.parse(line);
            switch (c) {
                case InstanceProtocol.Admit a -> {
                    admitted.put(a.lookupId(), simulator.admit(a.prompt()));
                    out.println(InstanceProtocol.event("admitted", Map.of()));
                }
                case InstanceProtocol.Serve s -> {
                    PreparedRequest prepared = admitted.remove(s.lookupId());
                    if (prepared == null) {
                        throw new IllegalStateException("serve of " + s.lookupId() + " without its admit");
                    }
                    long fromPrefetch = simulator.engine().prefetchStats().retrievedChunks();
                    int retrieved = simulator.serveLookedUp(s.request(), prepared, s.hitTokens(), s.lookupId());
                    out.println(InstanceProtocol.event("served", Map.of("retrieved", (long) retrieved,
                            "from_prefetch", simulator.engine().prefetchStats().retrievedChunks() - fromPrefetch)));
                }
                case InstanceProtocol.Stats ignored -> out.println(stats(simulator, lookups, transfers));
            }
        }
    }

    /** Everything the demo reports of this instance, after its disk writes and controller reports have drained. */
    private static String stats(ServingSimulator simulator, LookupServer lookups, P2pTransferServer transfers) {
        var engine = simulator.engine();
        engine.storage().tier(LocalDiskBackend.NAME).ifPresent(d -> {
            try {
                ((LocalDiskBackend) d).awaitPuts();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        ServingSimulator.Totals t = simulator.totals();
        PrefetchStats p = engine.prefetchStats();
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("requests", (long) t.requests());
        m.put("prompt_tokens", t.promptTokens());
        m.put("reused_tokens", t.reusedTokens());
        m.put("lookup_hit_tokens", t.lookupHitTokens());
        m.put("shortfalls", (long) t.shortfalls());
        m.put("mask_holes", (long) t.maskHoles());
        m.put("verified_bytes", t.verifiedBytes());
        m.put("mismatching_bytes", t.mismatchingBytes());
        m.put("problems", t.problems());
        m.put("prefetch_hits", p.retrievedChunks());
        m.put("prefetch_lower_tier_chunks", p.lowerTierChunks());
        m.put("prefetches_expired", p.expired());
        m.put("prefetches_held", (long) p.held());
        P2pBackend.Stats peer = engine.storage().tier(P2pBackend.NAME).map(b -> ((P2pBackend) b).stats()).orElse(null);
        m.put("p2p_chunks", peer == null ? 0L : peer.hits());
        m.put("p2p_bytes", peer == null ? 0L : peer.hitBytes());
        m.put("p2p_timeouts", peer == null ? 0L : peer.timeouts());
        m.put("p2p_failures", peer == null ? 0L : peer.failures());
        m.put("served_to_peers", transfers == null ? 0L : transfers.stats().hits());
        m.put("disk_reads", engine.storage().tier(LocalDiskBackend.NAME).map(d -> ((LocalDiskBackend) d).stats().reads()).orElse(0L));
        m.put("cpu_evictions", engine.storage().cpu().evictions());
        LookupServer.Stats ls = lookups.stats();
        m.put("lookups_answered", ls.answered());
        m.put("lookups_malformed", ls.malformed());
        Map<String, Long> controller = engine.controllerWorker().map(w -> w.counters()).orElse(Map.of());
        m.put("controller_registered", engine.controllerWorker().map(w -> w.registered()).orElse(false));
        m.put("controller_ops_reported", controller.getOrDefault("lmcache:controller_ops_reported", 0L));
        m.put("controller_ops_dropped", controller.getOrDefault("lmcache:controller_ops_dropped", 0L));
        m.put("event", "stats");
        return Json.write(m);
    }
}
