package lmcache4j.server.controller;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

import lmcache4j.server.controller.index.ChunkIndex;

/**
 * KV-aware lookup: a prompt's tokens to, for each instance, how many leading tokens it holds
 * (LMCache's {@code LookupRetMsg.layout_info}: {@code instance -> (location, tokens)}) and the
 * best instance to route the prompt to.
 *
 * <p>LMCache's controller walks the chunks and stops at the first chunk nobody holds, reporting
 * for each instance the end of the last chunk it held on the way; here each instance's count is
 * the prefix THAT instance holds contiguously from chunk 0, which is what it can actually reuse.
 * The location is the fastest one (CPU before disk before remote) holding the prefix's last chunk.
 */
public final class ControllerLookup {
    private final PromptKeys keys;
    private final ChunkIndex index;
    private final ControllerMetrics metrics;

    ControllerLookup(PromptKeys keys, ChunkIndex index, ControllerMetrics metrics) {
        this.keys = Objects.requireNonNull(keys, "keys");
        this.index = Objects.requireNonNull(index, "index");
        this.metrics = Objects.requireNonNull(metrics, "metrics");
    }

    /** One instance's cached prefix of the prompt: {@code tokens} leading tokens, served from {@code location}. */
    public record Layout(String instanceId, String location, int tokens) {
    }

    /**
     * The answer.
     *
     * @param layout       instances holding at least one leading chunk, sorted by id
     * @param best         the instance holding the longest prefix (ties: fewest entries, then in turn)
     * @param chunks       chunks the prompt was cut into
     * @param promptTokens tokens in the prompt
     */
    public record Answer(Map<String, Layout> layout, Optional<Layout> best, int chunks, int promptTokens) {
    }

    /** Looks {@code tokens} up. */
    public Answer lookup(int[] tokens) {
        long t0 = System.nanoTime();
        PromptKeys.Chunks chunks = keys.of(tokens);
        ChunkIndex.PrefixMatch m = index.longestPrefixes(chunks.keys(), chunks.count());
        Map<String, Layout> layout = new LinkedHashMap<>();
        for (ChunkIndex.InstanceHit h : m.hits()) {
            layout.put(h.instanceId(), layout(h, chunks));
        }
        Optional<Layout> best = m.best().map(h -> layout(h, chunks));
        metrics.lookup(System.nanoTime() - t0);
        return new Answer(layout, best, chunks.count(), tokens.length);
    }

    private static Layout layout(ChunkIndex.InstanceHit h, PromptKeys.Chunks chunks) {
        return new Layout(h.instanceId(), h.location(), chunks.ends()[h.chunks() - 1]);
    }

    /** How prompts are hashed. */
    public PromptKeys keys() {
        return keys;
    }
}
