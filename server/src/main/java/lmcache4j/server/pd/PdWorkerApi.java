package lmcache4j.server.pd;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

import lmcache4j.server.http.BadRequestException;
import lmcache4j.server.http.JsonBody;

/**
 * The JSON the proxy and the PD role processes exchange over HTTP, in one place: what a prefiller's
 * {@code POST /prefill} and a decoder's {@code POST /decode} take and answer. LMCache's proxy sends
 * vLLM's completion requests with a {@code kv_transfer_params.disagg_spec} (request id, receiver
 * host, init and alloc ports); these carry the same facts as token ids.
 */
public final class PdWorkerApi {
    private PdWorkerApi() {
    }

    /** A decoder's PD ports: where a prefiller pushes (one init and one alloc port per worker). */
    public record ReceiverSpec(String host, List<Integer> initPorts, List<Integer> allocPorts) {
        public ReceiverSpec {
            Objects.requireNonNull(host, "host");
            initPorts = List.copyOf(initPorts);
            allocPorts = List.copyOf(allocPorts);
            if (host.isBlank() || initPorts.isEmpty() || initPorts.size() != allocPorts.size()) {
                throw new IllegalArgumentException("a receiver is a host and as many init ports as alloc ports (one each "
                        + "per worker), got " + host + " " + initPorts + " " + allocPorts);
            }
        }

        /** How many tensor-parallel ranks the decoder has: the ready notices the proxy waits for. */
        public int ranks() {
            return initPorts.size();
        }

        Map<String, Object> json() {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("host", host);
            m.put("init_ports", longs(initPorts));
            m.put("alloc_ports", longs(allocPorts));
            return m;
        }

        static ReceiverSpec of(Object v) {
            if (!(v instanceof Map<?, ?> map)) {
                throw new BadRequestException("field \"receiver\" must be an object {host, init_ports, alloc_ports}");
            }
            @SuppressWarnings("unchecked")
            JsonBody b = new JsonBody((Map<String, Object>) map);
            try {
                return new ReceiverSpec(b.string("host"), b.optionalIntegers("init_ports").orElse(List.of()),
                        b.optionalIntegers("alloc_ports").orElse(List.of()));
            } catch (IllegalArgumentException e) {
                throw new BadRequestException("field \"receiver\": " + e.getMessage());
            }
        }
    }

    /** {@code POST /prefill}: compute {@code tokens}' KV and push it to {@code receiver} under {@code reqId}. */
    public record PrefillCall(String reqId, int[] tokens, ReceiverSpec receiver) {
        public PrefillCall {
            Objects.requireNonNull(reqId, "reqId");
            Objects.requireNonNull(receiver, "receiver");
            tokens = tokens.clone();
        }

        public Map<String, Object> json() {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("req_id", reqId);
            m.put("prompt_token_ids", tokenList(tokens));
            m.put("receiver", receiver.json());
            return m;
        }

        public static PrefillCall of(JsonBody b) {
            return new PrefillCall(requestId(b), b.tokens("prompt_token_ids"), ReceiverSpec.of(b.fields().get("receiver")));
        }
    }

    /** What a prefiller did: its push's counts, whether the proxy acknowledged its notice, and its time. */
    public record PrefillReply(String reqId, int pushedChunks, int alreadySentChunks, int refusedChunks, int failedChunks,
                               long pushedBytes, Optional<String> stopReason, boolean notified, double prefillMs,
                               double pushWaitMs) {
        public Map<String, Object> json() {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("req_id", reqId);
            m.put("pushed_chunks", (long) pushedChunks);
            m.put("already_sent_chunks", (long) alreadySentChunks);
            m.put("refused_chunks", (long) refusedChunks);
            m.put("failed_chunks", (long) failedChunks);
            m.put("pushed_bytes", pushedBytes);
            m.put("stop_reason", stopReason.orElse(null));
            m.put("notified", notified);
            m.put("prefill_ms", prefillMs);
            m.put("push_wait_ms", pushWaitMs);
            return m;
        }

        public static PrefillReply of(Map<String, Object> m) {
            return new PrefillReply(String.valueOf(m.get("req_id")), intOf(m, "pushed_chunks"), intOf(m, "already_sent_chunks"),
                    intOf(m, "refused_chunks"), intOf(m, "failed_chunks"), longOf(m, "pushed_bytes"),
                    Optional.ofNullable((String) m.get("stop_reason")), Boolean.TRUE.equals(m.get("notified")),
                    doubleOf(m, "prefill_ms"), doubleOf(m, "push_wait_ms"));
        }
    }

    /**
     * {@code POST /decode} (and a colocated worker's {@code POST /generate}): prefill {@code tokens}
     * reusing whatever KV was pushed, then generate {@code maxTokens} tokens greedily.
     */
    public record DecodeCall(String reqId, int[] tokens, int maxTokens, boolean returnLogits) {
        public DecodeCall {
            Objects.requireNonNull(reqId, "reqId");
            tokens = tokens.clone();
            if (maxTokens < 1) {
                throw new IllegalArgumentException("max_tokens must be at least 1, got " + maxTokens);
            }
        }

        public Map<String, Object> json() {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("req_id", reqId);
            m.put("prompt_token_ids", tokenList(tokens));
            m.put("max_tokens", (long) maxTokens);
            m.put("return_logits", returnLogits);
            return m;
        }

        public static DecodeCall of(JsonBody b) {
            Object max = b.fields().get("max_tokens");
            if (!(max instanceof Long n) || n < 1 || n > Integer.MAX_VALUE) {
                throw new BadRequestException("field \"max_tokens\" must be an integer of at least 1");
            }
            return new DecodeCall(requestId(b), b.tokens("prompt_token_ids"), (int) (long) n,
                    b.optionalBoolean("return_logits").orElse(false));
        }
    }

    /**
     * What a decoder generated: the tokens, how many prompt tokens came from pushed (or cached) KV,
     * how many positions its own prefill computed, its time to first token and to the last, each
     * token's time since the request arrived, and on request the last prompt position's logits.
     */
    public record DecodeReply(int[] tokens, int cachedTokens, int prefillPositions, double ttftMs, double totalMs,
                              double[] tokenTimesMs, Optional<float[]> logits) {
        public DecodeReply {
            tokens = tokens.clone();
            tokenTimesMs = tokenTimesMs.clone();
        }

        public Map<String, Object> json() {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("token_ids", tokenList(tokens));
            m.put("cached_tokens", (long) cachedTokens);
            m.put("prefill_positions", (long) prefillPositions);
            m.put("ttft_ms", ttftMs);
            m.put("total_ms", totalMs);
            List<Object> times = new ArrayList<>(tokenTimesMs.length);
            for (double t : tokenTimesMs) {
                times.add(t);
            }
            m.put("token_times_ms", times);
            logits.ifPresent(l -> {
                List<Object> out = new ArrayList<>(l.length);
                for (float f : l) {
                    out.add((double) f);
                }
                m.put("logits", out);
            });
            return m;
        }

        public static DecodeReply of(Map<String, Object> m) {
            JsonBody b = new JsonBody(m);
            double[] times = doubles(m.get("token_times_ms"));
            Optional<float[]> logits = Optional.ofNullable(m.get("logits")).map(v -> {
                double[] d = doubles(v);
                float[] f = new float[d.length];
                for (int i = 0; i < d.length; i++) {
                    f[i] = (float) d[i];
                }
                return f;
            });
            return new DecodeReply(b.tokens("token_ids"), intOf(m, "cached_tokens"), intOf(m, "prefill_positions"),
                    doubleOf(m, "ttft_ms"), doubleOf(m, "total_ms"), times, logits);
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof DecodeReply r && Arrays.equals(tokens, r.tokens) && cachedTokens == r.cachedTokens
                    && prefillPositions == r.prefillPositions;
        }

        @Override
        public int hashCode() {
            return Arrays.hashCode(tokens);
        }
    }

    private static String requestId(JsonBody b) {
        String id = b.string("req_id");
        if (id.isBlank() || id.length() > 256) {
            throw new BadRequestException("field \"req_id\" must have 1 to 256 characters");
        }
        return id;
    }

    static List<Object> tokenList(int[] tokens) {
        List<Object> out = new ArrayList<>(tokens.length);
        for (int t : tokens) {
            out.add((long) t);
        }
        return out;
    }

    private static List<Object> longs(List<Integer> values) {
        List<Object> out = new ArrayList<>(values.size());
        for (int v : values) {
            out.add((long) v);
        }
        return out;
    }

    private static int intOf(Map<String, Object> m, String name) {
        return Math.toIntExact(longOf(m, name));
    }

    private static long longOf(Map<String, Object> m, String name) {
        if (m.get(name) instanceof Number n) {
            return n.longValue();
        }
        throw new IllegalArgumentException("the worker's answer lacks the number \"" + name + "\"");
    }

    private static double doubleOf(Map<String, Object> m, String name) {
        if (m.get(name) instanceof Number n) {
            return n.doubleValue();
        }
        throw new IllegalArgumentException("the worker's answer lacks the number \"" + name + "\"");
    }

    private static double[] doubles(Object v) {
        if (!(v instanceof List<?> list)) {
            return new double[0];
        }
        double[] out = new double[list.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = list.get(i) instanceof Number n ? n.doubleValue() : Double.NaN;
        }
        return out;
    }
}
