package lmcache4j.engine.metrics;

/**
 * Something that publishes its own metrics into an engine's {@link EngineMetrics}: every tier
 * does, under LMCache's names, so the engine binds them without knowing which tiers it has.
 */
public interface MetricsSource {

    /** Binds this source's gauges and counters into {@code metrics}; called once, when the engine starts. */
    void publishMetrics(EngineMetrics metrics);
}
