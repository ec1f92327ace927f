package lmcache4j.engine.events;

import java.util.Objects;
import java.util.Optional;

import lmcache4j.engine.config.LMCacheEngineConfig;

/**
 * Where and how an engine publishes KV events, named as vLLM's {@code KVEventsConfig} names them
 * ({@code endpoint}, {@code replay_endpoint}, {@code topic}, {@code buffer_steps}, {@code hwm},
 * {@code max_queue_size}), from the config's {@code kv_events_*} fields.
 *
 * @param endpoint       the PUB address: bound when it holds {@code *}, {@code ::}, or is ipc/inproc; else connected
 * @param replayEndpoint the ROUTER address replay requests come to, bound; empty: no replay
 * @param topic          the first frame of every published message
 * @param bufferSteps    batches kept for replay
 * @param hwm            the PUB socket's send high-water mark (messages)
 * @param maxQueueSize   events waiting to be published at most; beyond that they are dropped
 */
public record KvEventsSettings(String endpoint, Optional<String> replayEndpoint, String topic, int bufferSteps, int hwm,
                               int maxQueueSize) {
    public KvEventsSettings {
        Objects.requireNonNull(endpoint, "endpoint");
        Objects.requireNonNull(replayEndpoint, "replayEndpoint");
        Objects.requireNonNull(topic, "topic");
        if (bufferSteps < 1 || hwm < 1 || maxQueueSize < 1) {
            throw new IllegalArgumentException("KV events: buffer steps, hwm and queue size must be at least 1");
        }
    }

    /** The settings of {@code config}; empty unless {@code kv_events_endpoint} is set. */
    public static Optional<KvEventsSettings> from(LMCacheEngineConfig config) {
        return config.kvEventsEndpoint().map(endpoint -> new KvEventsSettings(endpoint, config.kvEventsReplayEndpoint(),
                config.kvEventsTopic(), config.kvEventsBufferSteps(), config.kvEventsHwm(), config.kvEventsMaxQueueSize()));
    }
}
