package lmcache4j.server.mp;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * What the MP server holds and has done, taken on its loop thread: the body of
 * {@code GET /api/status} (in the shape of LMCache's {@code report_status()}: {@code is_healthy},
 * {@code chunk_size}, the storage subtree, active sessions and prefetch jobs, the registered
 * instances and the supported transfer mode) and of the {@code lmcache4j_mp_*} metrics.
 *
 * @param chunkSize        tokens per chunk
 * @param poolBytes        the shared-memory pool's size
 * @param usedBytes        bytes of the pool in chunk objects (stored, being written, or read)
 * @param objects          chunk objects stored
 * @param sessions         sessions open
 * @param prefetchJobs     lookups whose count has not been read
 * @param instances        registered instances: id → model_name, world_size, block_size, use_mla
 * @param requests         requests served, by operation name
 * @param dropped          requests dropped without a reply, by reason
 * @param refused          requests of operations this server does not serve, by operation name
 * @param refusal          what a client of a refused operation must change (empty when none came):
 *                         LMCache's protocol has no error reply, so this is where an operator reads it
 * @param evictions        objects evicted to make room
 * @param refusedWrites    chunks a prepare_store could not reserve (no room)
 * @param expiredLocks     read locks and reservations dropped for their lifetime
 * @param l2               the lower tiers ({@link MpL2Stats#NONE} when there are none)
 */
public record MpStatus(int chunkSize, long poolBytes, long usedBytes, long objects, int sessions, int prefetchJobs,
                       Map<Long, Map<String, Object>> instances, Map<String, Long> requests, Map<String, Long> dropped,
                       Map<String, Long> refused, String refusal, long evictions, long refusedWrites, long expiredLocks,
                       MpL2Stats l2) {
    public MpStatus {
        instances = Map.copyOf(instances);
        requests = Map.copyOf(requests);
        dropped = Map.copyOf(dropped);
        refused = Map.copyOf(refused);
        Objects.requireNonNull(refusal, "refusal");
    }

    /** {@code GET /api/status}. */
    public Map<String, Object> toJson() {
        Map<String, Object> storage = new LinkedHashMap<>();
        storage.put("is_healthy", true);
        storage.put("l1_pool_bytes", poolBytes);
        storage.put("l1_used_bytes", usedBytes);
        storage.put("l1_objects", objects);
        storage.put("evictions", evictions);
        storage.put("refused_writes", refusedWrites);
        storage.put("expired_locks", expiredLocks);
        Map<String, Object> lower = new LinkedHashMap<>();
        lower.put("enabled", !l2.tiers().isEmpty());
        lower.put("tiers", l2.tiers());
        lower.put("write_queue", l2.queued());
        lower.put("objects_written", l2.written());
        lower.put("tier_writes", l2.tierWrites());
        lower.put("write_drops", l2.writeDrops());
        lower.put("write_failures", l2.writeFailures());
        lower.put("prefetch_jobs", l2.prefetchJobs());
        lower.put("prefetched_objects", l2.prefetchedObjects());
        lower.put("prefetch_failures", l2.prefetchFailures());
        lower.put("staging_bytes", l2.stagingBytes());
        storage.put("l2", lower);
        Map<String, Object> meta = new LinkedHashMap<>();
        new java.util.TreeMap<>(instances).forEach((id, m) -> meta.put(Long.toString(id), m));
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("is_healthy", true);
        out.put("engine_type", "lmcache4j mp-server");
        out.put("chunk_size", chunkSize);
        out.put("hash_algorithm", "blake3");
        out.put("active_sessions", sessions);
        out.put("active_prefetch_jobs", prefetchJobs);
        out.put("storage_manager", storage);
        out.put("registered_non_cuda_instance_ids", List.copyOf(new java.util.TreeSet<>(instances.keySet())));
        out.put("non_cuda_context_meta", meta);
        out.put("supported_transfer_mode", "engine_driven");
        out.put("requests", new java.util.TreeMap<>(requests));
        out.put("dropped", new java.util.TreeMap<>(dropped));
        out.put("refused_operations", new java.util.TreeMap<>(refused));
        if (!refusal.isEmpty()) {
            out.put("refusal", refusal);
        }
        return out;
    }

    /** The {@code lmcache4j_mp_*} series of {@code /metrics}, in Prometheus' text format. */
    public String prometheus() {
        StringBuilder sb = new StringBuilder();
        gauge(sb, "lmcache4j_mp_pool_bytes", poolBytes);
        gauge(sb, "lmcache4j_mp_used_bytes", usedBytes);
        gauge(sb, "lmcache4j_mp_objects", objects);
        gauge(sb, "lmcache4j_mp_sessions", sessions);
        gauge(sb, "lmcache4j_mp_prefetch_jobs", prefetchJobs);
        gauge(sb, "lmcache4j_mp_instances", instances.size());
        counter(sb, "lmcache4j_mp_evictions_total", evictions);
        counter(sb, "lmcache4j_mp_refused_writes_total", refusedWrites);
        counter(sb, "lmcache4j_mp_expired_locks_total", expiredLocks);
        gauge(sb, "lmcache4j_mp_l2_tiers", l2.tiers().size());
        gauge(sb, "lmcache4j_mp_l2_write_queue", l2.queued());
        gauge(sb, "lmcache4j_mp_l2_staging_bytes", l2.stagingBytes());
        counter(sb, "lmcache4j_mp_l2_objects_written_total", l2.written());
        counter(sb, "lmcache4j_mp_l2_tier_writes_total", l2.tierWrites());
        counter(sb, "lmcache4j_mp_l2_write_drops_total", l2.writeDrops());
        counter(sb, "lmcache4j_mp_l2_write_failures_total", l2.writeFailures());
        counter(sb, "lmcache4j_mp_l2_prefetch_jobs_total", l2.prefetchJobs());
        counter(sb, "lmcache4j_mp_l2_prefetched_objects_total", l2.prefetchedObjects());
        counter(sb, "lmcache4j_mp_l2_prefetch_failures_total", l2.prefetchFailures());
        sb.append("# TYPE lmcache4j_mp_requests_total counter\n");
        new java.util.TreeMap<>(requests).forEach((op, n) ->
                sb.append("lmcache4j_mp_requests_total{op=\"").append(op).append("\"} ").append(n).append('\n'));
        sb.append("# TYPE lmcache4j_mp_dropped_total counter\n");
        new java.util.TreeMap<>(dropped).forEach((reason, n) ->
                sb.append("lmcache4j_mp_dropped_total{reason=\"").append(reason).append("\"} ").append(n).append('\n'));
        sb.append("# TYPE lmcache4j_mp_refused_total counter\n");
        new java.util.TreeMap<>(refused).forEach((op, n) ->
                sb.append("lmcache4j_mp_refused_total{op=\"").append(op).append("\"} ").append(n).append('\n'));
        return sb.toString();
    }

    private static void gauge(StringBuilder sb, String name, long value) {
        sb.append("# TYPE ").append(name).append(" gauge\n").append(name).append(' ').append(value).append('\n');
    }

    private static void counter(StringBuilder sb, String name, long value) {
        sb.append("# TYPE ").append(name).append(" counter\n").append(name).append(' ').append(value).append('\n');
    }
}
