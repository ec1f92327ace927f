package lmcache4j.bench.trace;

import java.util.List;
import java.util.Objects;

/**
 * A request trace in Mooncake's format (one request per line: arrival time, prompt and answer
 * lengths, one id per block of the prompt, equal ids meaning an equal prefix), read by
 * {@link TraceFile}. Block ids are renumbered densely in order of first appearance, so a trace of
 * any ids costs memory in proportion to its distinct blocks.
 *
 * @param source      where it came from (a path, or the bundled trace's name), for reports
 * @param blockTokens tokens per block (512 in Mooncake's traces)
 * @param requests    the requests in arrival (file) order
 * @param blocks      how many distinct block ids the trace has (dense ids are {@code 0..blocks-1})
 */
public record Trace(String source, int blockTokens, List<Request> requests, int blocks) {

    /**
     * One request.
     *
     * @param line         its line in the file (from 1), for messages
     * @param timestampMs  arrival, in milliseconds from the start of the trace
     * @param inputTokens  prompt length
     * @param outputTokens answer length
     * @param blockIds     dense ids of the prompt's blocks, the last possibly partial
     */
    public record Request(int line, long timestampMs, int inputTokens, int outputTokens, int[] blockIds) {
        /** Blocks of the prompt that are full ({@code blockTokens} tokens): the only ones a serving engine stores. */
        public int fullBlocks(int blockTokens) {
            return Math.min(blockIds.length, inputTokens / blockTokens);
        }
    }

    public Trace {
        Objects.requireNonNull(source, "source");
        requests = List.copyOf(requests);
        if (blockTokens < 1) {
            throw new IllegalArgumentException("blockTokens must be positive, was " + blockTokens);
        }
    }

    /** The first {@code n} requests (all of them when there are fewer). */
    public Trace prefix(int n) {
        if (n < 0) {
            throw new IllegalArgumentException("a prefix of " + n + " requests");
        }
        if (n >= requests.size()) {
            return this;
        }
        List<Request> first = requests.subList(0, n);
        int max = -1;
        for (Request r : first) {
            for (int id : r.blockIds()) {
                max = Math.max(max, id);
            }
        }
        return new Trace(source + " (first " + first.size() + " requests)", blockTokens, first, max + 1);
    }

    /** Full-block accesses: the sum over requests of their full blocks. */
    public long fullBlockAccesses() {
        long n = 0;
        for (Request r : requests) {
            n += r.fullBlocks(blockTokens);
        }
        return n;
    }

    /** Prompt tokens over all requests. */
    public long inputTokens() {
        long n = 0;
        for (Request r : requests) {
            n += r.inputTokens();
        }
        return n;
    }

    /** Distinct blocks among the full ones: what a cache could ever hold. */
    public int distinctFullBlocks() {
        boolean[] seen = new boolean[blocks];
        int n = 0;
        for (Request r : requests) {
            int full = r.fullBlocks(blockTokens);
            for (int i = 0; i < full; i++) {
                if (!seen[r.blockIds()[i]]) {
                    seen[r.blockIds()[i]] = true;
                    n++;
                }
            }
        }
        return n;
    }

    /** Seconds from the first arrival to the last. */
    public double durationSeconds() {
        return requests.isEmpty() ? 0 : (requests.getLast().timestampMs() - requests.getFirst().timestampMs()) / 1000.0;
    }
}
