package lmcache4j.engine.metrics;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

import org.HdrHistogram.Histogram;

/**
 * The engine's metrics at one moment. Counters are cumulative; hit rates cover the interval since
 * the previous snapshot; bandwidths are bytes actually copied ÷ time spent copying (GB/s);
 * {@code tierReadings} are the tiers' own metrics by Prometheus name (the CPU tier's lock counters, the
 * disk and remote tiers' metrics).
 */
public record MetricsSnapshot(String modelName, int workerId,
                              long retrieveRequests, long storeRequests, long lookupRequests,
                              long requestedTokens, long hitTokens, long lookupTokens, long lookupHits,
                              long storedTokens, long storedBytes, long retrievedBytes,
                              double retrieveHitRate, double lookupHitRate,
                              double storeGbps, double retrieveGbps,
                              long localCacheUsageBytes, long activeMemoryObjs, long pinnedMemoryObjs,
                              long hotCacheCount, long localCpuEvictions, long localCpuEvictionFailures,
                              Histogram timeToStore, Histogram timeToRetrieve, Histogram storeSpeed,
                              Histogram retrieveSpeed, Map<String, Long> tierReadings) {
    public MetricsSnapshot {
        tierReadings = Collections.unmodifiableMap(new LinkedHashMap<>(tierReadings));
    }
}
