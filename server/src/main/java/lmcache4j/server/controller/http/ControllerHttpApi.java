package lmcache4j.server.controller.http;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import java.util.function.Supplier;

import lmcache4j.server.controller.ControllerLookup;
import lmcache4j.server.controller.ControllerMetrics;
import lmcache4j.server.controller.index.ChunkIndex;
import lmcache4j.server.controller.registry.WorkerInfo;
import lmcache4j.server.controller.registry.WorkerRegistry;
import lmcache4j.server.http.BadRequestException;
import lmcache4j.server.http.JsonBody;
import lmcache4j.server.http.JsonHttpServer;

/**
 * The read side of the controller's HTTP API: {@code POST /lookup}, {@code GET /instances},
 * {@code GET /metrics}. The control routes ({@code /clear}, {@code /pin}, ...) are added by the
 * controller's orchestration ({@link #routes}).
 */
public final class ControllerHttpApi {
    private final ControllerLookup lookup;
    private final WorkerRegistry registry;
    private final ChunkIndex index;
    private final ControllerMetrics metrics;
    private final Map<String, Object> settings;
    private final Supplier<String> eventIds;

    /**
     * @param settings what {@code GET /instances} reports as the controller's configuration
     * @param eventIds a fresh event id for requests that bring none
     */
    public ControllerHttpApi(ControllerLookup lookup, WorkerRegistry registry, ChunkIndex index, ControllerMetrics metrics,
                             Map<String, Object> settings, Supplier<String> eventIds) {
        this.lookup = Objects.requireNonNull(lookup);
        this.registry = Objects.requireNonNull(registry);
        this.index = Objects.requireNonNull(index);
        this.metrics = Objects.requireNonNull(metrics);
        this.settings = Map.copyOf(settings);
        this.eventIds = Objects.requireNonNull(eventIds);
    }

    /** Adds the routes of this API to {@code server}. */
    public void routes(JsonHttpServer server) {
        server.post("/lookup", this::lookup);
        server.getWithQuery("/instances", this::instances);
        server.get("/metrics", () -> new JsonHttpServer.Text("text/plain; version=0.0.4; charset=utf-8", metrics.render()));
    }

    /** {@code POST /lookup {"tokens": [...], "event_id"?: "..."}}. */
    Object lookup(JsonBody body) {
        int[] tokens = body.tokens("tokens");
        String eventId = body.optionalString("event_id").orElseGet(eventIds);
        ControllerLookup.Answer a = lookup.lookup(tokens);
        Map<String, Object> layout = new LinkedHashMap<>();
        a.layout().forEach((instance, l) -> layout.put(instance, List.of(l.location(), (long) l.tokens())));
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("event_id", eventId);
        out.put("layout_info", layout);
        out.put("best_instance", a.best().map(ControllerLookup.Layout::instanceId).orElse(null));
        out.put("best_location", a.best().map(ControllerLookup.Layout::location).orElse(null));
        out.put("best_tokens", (long) a.best().map(ControllerLookup.Layout::tokens).orElse(0));
        out.put("prompt_tokens", (long) a.promptTokens());
        out.put("chunks", (long) a.chunks());
        return out;
    }

    /** Instances per {@code GET /instances} page when the request names no {@code limit}. */
    static final int DEFAULT_PAGE = 1_000;
    /** The largest {@code limit} a page may ask for. */
    static final int MAX_PAGE = 10_000;

    /**
     * {@code GET /instances[?offset=N][&limit=M]}: registered workers with their entries per location,
     * and the hashing settings; instances in id order, a page at a time ({@value #DEFAULT_PAGE} by
     * default, at most {@value #MAX_PAGE}), with {@code total_instances} and {@code next_offset} (null
     * on the last page), so a registry of a million workers is not one 67 MB answer.
     */
    Object instances(Map<String, String> query) {
        int offset = pageParameter(query, "offset", 0, Integer.MAX_VALUE);
        int limit = pageParameter(query, "limit", DEFAULT_PAGE, MAX_PAGE);
        Map<String, List<WorkerInfo>> byInstance = new TreeMap<>();
        for (WorkerInfo w : registry.workers()) {
            byInstance.computeIfAbsent(w.key().instanceId(), k -> new ArrayList<>()).add(w);
        }
        Map<String, List<WorkerInfo>> page = new LinkedHashMap<>();
        byInstance.entrySet().stream().skip(offset).limit(limit).forEach(e -> page.put(e.getKey(), e.getValue()));
        Map<String, Map<Integer, Map<String, Long>>> entries = new TreeMap<>(); // of the page's instances only
        for (ChunkIndex.HolderEntries h : index.holders()) {
            if (page.containsKey(h.holder().instanceId())) {
                entries.computeIfAbsent(h.holder().instanceId(), k -> new TreeMap<>())
                        .computeIfAbsent(h.holder().workerId(), k -> new TreeMap<>())
                        .put(h.holder().location(), h.entries());
            }
        }
        List<Object> instances = new ArrayList<>();
        page.forEach((id, workers) -> {
            List<Object> described = new ArrayList<>();
            for (WorkerInfo w : workers) {
                Map<String, Object> worker = new LinkedHashMap<>();
                worker.put("worker_id", (long) w.key().workerId());
                worker.put("ip", w.ip());
                worker.put("port", (long) w.port());
                worker.put("peer_init_url", w.peerInitUrl().orElse(null));
                worker.put("registration_time", w.registeredAt().toEpochMilli() / 1000.0);
                worker.put("last_heartbeat_time", w.lastHeartbeat().toEpochMilli() / 1000.0);
                worker.put("entries", new LinkedHashMap<>(entries.getOrDefault(id, Map.of())
                        .getOrDefault(w.key().workerId(), Map.of())));
                described.add(worker);
            }
            instances.add(Map.of("instance_id", id, "workers", described));
        });
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("instances", instances);
        out.put("total_instances", byInstance.size());
        out.put("offset", offset);
        long next = (long) offset + instances.size();
        out.put("next_offset", next < byInstance.size() ? next : null);
        out.put("index_entries", index.entries());
        out.put("index_bytes", index.memoryBytes());
        out.put("settings", settings);
        return out;
    }

    private static int pageParameter(Map<String, String> query, String name, int absent, int max) {
        String v = query.get(name);
        if (v == null) {
            return absent;
        }
        try {
            int n = Integer.parseInt(v);
            if (n >= 0 && n <= max) {
                return n;
            }
        } catch (NumberFormatException e) {
            // refused below
        }
        throw new BadRequestException(name + " must be a whole number from 0 to " + max + ", not "
                + v.substring(0, Math.min(v.length(), 24)));
    }
}
