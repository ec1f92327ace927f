package lmcache4j.engine.metrics;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class EngineMetricsTest {
    @Test
    void countersAreCumulativeAndHitRatesPerInterval() {
        EngineMetrics m = new EngineMetrics("m\"odel", 3);
        m.recordRetrieve(1000, 750, 3_000_000, 1_000_000, 2_000_000);
        m.recordLookup(1000, 500);
        MetricsSnapshot first = m.snapshot();
        assertEquals(0.75, first.retrieveHitRate(), 1e-9);
        assertEquals(0.5, first.lookupHitRate(), 1e-9);
        assertEquals(3.0, first.retrieveGbps(), 1e-9, "bytes copied / copy time");
        m.recordRetrieve(100, 0, 0, 0, 1_000);
        MetricsSnapshot second = m.snapshot();
        assertEquals(0.0, second.retrieveHitRate(), "the interval holds only the miss");
        assertEquals(1100, second.requestedTokens(), "counters keep counting");
        assertEquals(2, second.timeToRetrieve().getTotalCount());
    }

    @Test
    void prometheusTextUsesLmcachesNamesLabelsAndCumulativeBuckets() {
        EngineMetrics m = new EngineMetrics("m\"odel", 3);
        m.recordStore(256, 1 << 20, 500_000, 3_000_000);   // 3 ms
        m.recordStore(256, 1 << 20, 500_000, 200_000_000); // 200 ms
        String text = m.toPrometheus();
        assertTrue(text.contains("lmcache:num_store_requests{model_name=\"m\\\"odel\",worker_id=\"3\"} 2"), text);
        assertTrue(text.contains("# TYPE lmcache:time_to_store histogram"), text);
        assertTrue(text.contains("lmcache:time_to_store_bucket{model_name=\"m\\\"odel\",worker_id=\"3\",le=\"0.001\"} 0"), text);
        assertTrue(text.contains("lmcache:time_to_store_bucket{model_name=\"m\\\"odel\",worker_id=\"3\",le=\"0.005\"} 1"), text);
        assertTrue(text.contains("lmcache:time_to_store_bucket{model_name=\"m\\\"odel\",worker_id=\"3\",le=\"0.25\"} 2"), text);
        assertTrue(text.contains("lmcache:time_to_store_count{model_name=\"m\\\"odel\",worker_id=\"3\"} 2"), text);
        assertTrue(text.contains("lmcache:num_stored_bytes{model_name=\"m\\\"odel\",worker_id=\"3\"} 2097152"), text);
    }
}
