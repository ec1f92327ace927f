package lmcache4j.engine.metrics;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.LongSupplier;

/**
 * The engine's metrics with LMCache's names (spec §8.4): counters, gauges and latency histograms,
 * labelled with the model and worker. Recording is lock-free. Bandwidth is computed from the bytes
 * the connectors actually copied and the time the copies took, not from object sizes.
 *
 * <p>Hit rates are per logging interval, as in LMCache: {@link #snapshot()} reports the interval
 * since the previous snapshot and starts a new one; the counters are cumulative.
 */
public final class EngineMetrics {
    private final String modelName;
    private final int workerId;

    final LongAdder retrieveRequests = new LongAdder();
    final LongAdder storeRequests = new LongAdder();
    final LongAdder lookupRequests = new LongAdder();
    final LongAdder requestedTokens = new LongAdder();
    final LongAdder hitTokens = new LongAdder();
    final LongAdder lookupTokens = new LongAdder();
    final LongAdder lookupHits = new LongAdder();
    final LongAdder storedTokens = new LongAdder();
    final LongAdder storedBytes = new LongAdder();
    final LongAdder retrievedBytes = new LongAdder();
    final LongAdder storeCopyNanos = new LongAdder();
    final LongAdder retrieveCopyNanos = new LongAdder();
    final LongAdder hashedTokens = new LongAdder();

    private final AtomicLong intervalRequested = new AtomicLong();
    private final AtomicLong intervalHit = new AtomicLong();
    private final AtomicLong intervalLookupTokens = new AtomicLong();
    private final AtomicLong intervalLookupHits = new AtomicLong();

    final LatencyHistogram timeToStore = new LatencyHistogram("lmcache:time_to_store",
            "Time to store a request's KV (seconds)", LatencyHistogram.secondsBuckets(), 1e9, LatencyHistogram.maxNanos());
    final LatencyHistogram timeToRetrieve = new LatencyHistogram("lmcache:time_to_retrieve",
            "Time to retrieve a request's KV (seconds)", LatencyHistogram.secondsBuckets(), 1e9, LatencyHistogram.maxNanos());
    final LatencyHistogram storeSpeed = new LatencyHistogram("lmcache:store_speed",
            "Stored tokens per second of a store", LatencyHistogram.speedBuckets(), 1, 1L << 40);
    final LatencyHistogram retrieveSpeed = new LatencyHistogram("lmcache:retrieve_speed",
            "Retrieved tokens per second of a retrieve", LatencyHistogram.speedBuckets(), 1, 1L << 40);

    private volatile TierGauges tiers = TierGauges.NONE;

    /** Live readings of the CPU tier, supplied by the engine. */
    public record TierGauges(LongSupplier cacheUsageBytes, LongSupplier activeObjects, LongSupplier pinnedObjects,
                             LongSupplier hotCacheCount, LongSupplier evictions, LongSupplier evictionFailures) {
        static final TierGauges NONE = new TierGauges(() -> 0, () -> 0, () -> 0, () -> 0, () -> 0, () -> 0);
    }

    /**
     * A metric read from a lower tier when a snapshot is taken (disk and remote tiers).
     *
     * @param name    the Prometheus name, LMCache's where it has one
     * @param help    one line of help text
     * @param counter true for a counter, false for a gauge
     * @param value   the current reading
     */
    public record TierMetric(String name, String help, boolean counter, LongSupplier value) {
    }

    private final List<TierMetric> tierMetrics = new CopyOnWriteArrayList<>();

    /** Adds a lower tier's metric to every snapshot and to the Prometheus text. */
    public void bindTierMetric(TierMetric metric) {
        tierMetrics.add(metric);
    }

    public EngineMetrics(String modelName, int workerId) {
        this.modelName = modelName;
        this.workerId = workerId;
    }

    /** Connects the tier gauges. */
    public void bindTiers(TierGauges gauges) {
        this.tiers = gauges;
    }

    // ---- recording --------------------------------------------------------------------------

    /** A store finished: tokens and bytes actually copied, copy time and total time. */
    public void recordStore(long tokens, long bytesCopied, long copyNanos, long totalNanos) {
        storeRequests.increment();
        storedTokens.add(tokens);
        storedBytes.add(bytesCopied);
        storeCopyNanos.add(copyNanos);
        timeToStore.record(totalNanos);
        if (totalNanos > 0 && tokens > 0) {
            storeSpeed.record((long) (tokens * 1e9 / totalNanos));
        }
    }

    /** A retrieve finished: tokens requested and retrieved, bytes actually copied, times. */
    public void recordRetrieve(long requested, long retrieved, long bytesCopied, long copyNanos, long totalNanos) {
        retrieveRequests.increment();
        requestedTokens.add(requested);
        hitTokens.add(retrieved);
        intervalRequested.addAndGet(requested);
        intervalHit.addAndGet(retrieved);
        retrievedBytes.add(bytesCopied);
        retrieveCopyNanos.add(copyNanos);
        timeToRetrieve.record(totalNanos);
        if (totalNanos > 0 && retrieved > 0) {
            retrieveSpeed.record((long) (retrieved * 1e9 / totalNanos));
        }
    }

    /** A lookup finished: tokens asked about and tokens found. */
    public void recordLookup(long tokens, long hits) {
        lookupRequests.increment();
        lookupTokens.add(tokens);
        lookupHits.add(hits);
        intervalLookupTokens.addAndGet(tokens);
        intervalLookupHits.addAndGet(hits);
    }

    /** A request's tokens were hashed into chunk keys. */
    public void recordHashed(long tokens) {
        hashedTokens.add(tokens);
    }

    // ---- reading ----------------------------------------------------------------------------

    /** Tokens hashed into chunk keys since creation: a request prepared once counts its tokens once. */
    public long hashedTokens() {
        return hashedTokens.sum();
    }

    /** Every metric now; the hit rates cover the interval since the previous snapshot. */
    public MetricsSnapshot snapshot() {
        long req = intervalRequested.getAndSet(0);
        long hit = intervalHit.getAndSet(0);
        long lt = intervalLookupTokens.getAndSet(0);
        long lh = intervalLookupHits.getAndSet(0);
        TierGauges t = tiers;
        return new MetricsSnapshot(modelName, workerId,
                retrieveRequests.sum(), storeRequests.sum(), lookupRequests.sum(),
                requestedTokens.sum(), hitTokens.sum(), lookupTokens.sum(), lookupHits.sum(), storedTokens.sum(),
                storedBytes.sum(), retrievedBytes.sum(),
                req == 0 ? 0 : (double) hit / req, lt == 0 ? 0 : (double) lh / lt,
                gbps(storedBytes.sum(), storeCopyNanos.sum()), gbps(retrievedBytes.sum(), retrieveCopyNanos.sum()),
                t.cacheUsageBytes().getAsLong(), t.activeObjects().getAsLong(), t.pinnedObjects().getAsLong(),
                t.hotCacheCount().getAsLong(), t.evictions().getAsLong(), t.evictionFailures().getAsLong(),
                timeToStore.snapshot(), timeToRetrieve.snapshot(), storeSpeed.snapshot(), retrieveSpeed.snapshot(),
                tierReadings());
    }

    /** The snapshot in Prometheus text exposition format (version 0.0.4). */
    public String toPrometheus() {
        return PrometheusText.render(snapshot(), new LatencyHistogram[] {timeToStore, timeToRetrieve, storeSpeed, retrieveSpeed},
                tierMetrics, hashedTokens.sum());
    }

    private Map<String, Long> tierReadings() {
        Map<String, Long> readings = new LinkedHashMap<>();
        for (TierMetric m : tierMetrics) {
            readings.put(m.name(), m.value().getAsLong());
        }
        return readings;
    }

    /** The lower tiers' metric definitions, for renderers. */
    List<TierMetric> tierMetrics() {
        return tierMetrics;
    }

    private static double gbps(long bytes, long nanos) {
        return nanos == 0 ? 0 : bytes / (double) nanos; // bytes per ns = GB/s
    }
}
