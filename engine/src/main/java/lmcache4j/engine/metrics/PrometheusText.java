package lmcache4j.engine.metrics;

import java.util.List;

import org.HdrHistogram.Histogram;

/** Renders a {@link MetricsSnapshot} in the Prometheus text format with LMCache's metric names. */
final class PrometheusText {
    private PrometheusText() {
    }

    static String render(MetricsSnapshot s, LatencyHistogram[] histograms, List<EngineMetrics.TierMetric> tierMetrics,
                         long hashedTokens) {
        StringBuilder out = new StringBuilder(4096);
        String labels = "{model_name=\"" + escape(s.modelName()) + "\",worker_id=\"" + s.workerId() + "\"}";
        counter(out, labels, "lmcache:num_retrieve_requests", "Retrieve requests", s.retrieveRequests());
        counter(out, labels, "lmcache:num_store_requests", "Store requests", s.storeRequests());
        counter(out, labels, "lmcache:num_lookup_requests", "Lookup requests", s.lookupRequests());
        counter(out, labels, "lmcache:num_requested_tokens", "Tokens asked for by retrieves", s.requestedTokens());
        counter(out, labels, "lmcache:num_hit_tokens", "Tokens delivered by retrieves", s.hitTokens());
        counter(out, labels, "lmcache:num_lookup_tokens", "Tokens asked about by lookups", s.lookupTokens());
        counter(out, labels, "lmcache:num_lookup_hits", "Tokens found by lookups", s.lookupHits());
        counter(out, labels, "lmcache:num_stored_tokens", "Tokens stored (lmcache4j)", s.storedTokens());
        counter(out, labels, "lmcache:num_stored_bytes", "KV bytes copied in by stores (lmcache4j)", s.storedBytes());
        counter(out, labels, "lmcache:num_retrieved_bytes", "KV bytes copied out by retrieves (lmcache4j)", s.retrievedBytes());
        counter(out, labels, "lmcache:num_hashed_tokens", "Tokens hashed into chunk keys (lmcache4j)", hashedTokens);
        counter(out, labels, "lmcache:local_cpu_evict_count", "CPU-tier evictions", s.localCpuEvictions());
        counter(out, labels, "lmcache:local_cpu_evict_failed_count", "Allocations that found nothing to evict",
                s.localCpuEvictionFailures());
        gauge(out, labels, "lmcache:retrieve_hit_rate", "Retrieved / requested tokens in the last interval", s.retrieveHitRate());
        gauge(out, labels, "lmcache:lookup_hit_rate", "Found / asked tokens of lookups in the last interval", s.lookupHitRate());
        gauge(out, labels, "lmcache:local_cache_usage", "Bytes used in the CPU pool", s.localCacheUsageBytes());
        gauge(out, labels, "lmcache:active_memory_objs_count", "Live memory objects", s.activeMemoryObjs());
        gauge(out, labels, "lmcache:pinned_memory_objs_count", "Pinned memory objects", s.pinnedMemoryObjs());
        gauge(out, labels, "lmcache:local_cpu_hot_cache_count", "Chunks in the CPU tier", s.hotCacheCount());
        gauge(out, labels, "lmcache:store_bandwidth_gbps", "Bytes copied by stores / copy time, GB/s (lmcache4j)", s.storeGbps());
        gauge(out, labels, "lmcache:retrieve_bandwidth_gbps", "Bytes copied by retrieves / copy time, GB/s (lmcache4j)",
                s.retrieveGbps());
        for (EngineMetrics.TierMetric m : tierMetrics) {
            long value = s.tierReadings().getOrDefault(m.name(), 0L);
            if (m.counter()) {
                counter(out, labels, m.name(), m.help(), value);
            } else {
                gauge(out, labels, m.name(), m.help(), value);
            }
        }
        Histogram[] snapshots = {s.timeToStore(), s.timeToRetrieve(), s.storeSpeed(), s.retrieveSpeed()};
        for (int i = 0; i < histograms.length; i++) {
            histogram(out, s, histograms[i], snapshots[i]);
        }
        return out.toString();
    }

    private static void counter(StringBuilder out, String labels, String name, String help, long value) {
        out.append("# HELP ").append(name).append(' ').append(help).append('\n');
        out.append("# TYPE ").append(name).append(" counter\n");
        out.append(name).append(labels).append(' ').append(value).append('\n');
    }

    private static void gauge(StringBuilder out, String labels, String name, String help, double value) {
        out.append("# HELP ").append(name).append(' ').append(help).append('\n');
        out.append("# TYPE ").append(name).append(" gauge\n");
        out.append(name).append(labels).append(' ').append(format(value)).append('\n');
    }

    private static void histogram(StringBuilder out, MetricsSnapshot s, LatencyHistogram h, Histogram data) {
        String base = "model_name=\"" + escape(s.modelName()) + "\",worker_id=\"" + s.workerId() + "\"";
        out.append("# HELP ").append(h.name()).append(' ').append(h.help()).append('\n');
        out.append("# TYPE ").append(h.name()).append(" histogram\n");
        for (double bound : h.bucketBounds()) {
            long limit = (long) Math.floor(bound * h.unitDivisor());
            long count = data.getTotalCount() == 0 ? 0 : countAtOrBelow(data, limit);
            out.append(h.name()).append("_bucket{").append(base).append(",le=\"").append(format(bound)).append("\"} ")
                    .append(count).append('\n');
        }
        out.append(h.name()).append("_bucket{").append(base).append(",le=\"+Inf\"} ").append(data.getTotalCount()).append('\n');
        double sum = data.getMean() * data.getTotalCount() / h.unitDivisor();
        out.append(h.name()).append("_sum{").append(base).append("} ").append(format(sum)).append('\n');
        out.append(h.name()).append("_count{").append(base).append("} ").append(data.getTotalCount()).append('\n');
    }

    private static long countAtOrBelow(Histogram data, long limit) {
        return limit < data.getMinValue() ? 0 : data.getCountBetweenValues(0, limit);
    }

    private static String format(double v) {
        if (v == Math.rint(v) && Math.abs(v) < 1e15) {
            return Long.toString((long) v);
        }
        return Double.toString(v); // shortest round-trip form; Prometheus parses it, exponent included
    }

    private static String escape(String s) {
        return s.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n");
    }
}
