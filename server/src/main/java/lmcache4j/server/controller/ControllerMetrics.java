package lmcache4j.server.controller;

import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.LongSupplier;

/**
 * The controller's counters and its lookup-latency histogram, rendered in Prometheus' text format
 * (version 0.0.4) for {@code GET /metrics}. Counters are {@link LongAdder}s: the ingestion thread
 * and the HTTP threads update them without contending.
 *
 * <p>Message types are counted by name only for names the codec knows (a fixed set), so a peer
 * cannot grow the label set; everything else is "unknown".
 */
public final class ControllerMetrics {
    /** Upper bounds of the lookup latency buckets, in seconds. */
    private static final double[] LOOKUP_BUCKETS = {10e-6, 25e-6, 50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3,
            25e-3, 100e-3};

    private final Map<String, LongAdder> counters = new ConcurrentHashMap<>();
    @SuppressWarnings("unchecked")
    private final Map<String, LongAdder>[] messages = new Map[Socket.values().length];
    private final Map<String, LongSupplier> gauges = new ConcurrentHashMap<>();
    private final Map<String, LongSupplier> counterReads = new ConcurrentHashMap<>();
    private final LongAdder[] lookupBuckets = new LongAdder[LOOKUP_BUCKETS.length + 1];
    private final LongAdder lookupNanos = new LongAdder();
    private final LongAdder lookups = new LongAdder();

    public ControllerMetrics() {
        for (int i = 0; i < messages.length; i++) {
            messages[i] = new ConcurrentHashMap<>();
        }
        for (int i = 0; i < lookupBuckets.length; i++) {
            lookupBuckets[i] = new LongAdder();
        }
    }

    /** The socket a message came in on, as a label. */
    public enum Socket {
        PULL, REPLY, HEARTBEAT, WORKER_REQ;

        String label() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    /** One well-formed message of {@code type} (a class name the codec knows) on {@code socket}. */
    public void message(Socket socket, String type) {
        // Per frame on the ingestion path: one map probe by the (hash-cached) type name, no string built.
        Map<String, LongAdder> bySocket = messages[socket.ordinal()];
        LongAdder a = bySocket.get(type);
        if (a == null) {
            a = bySocket.computeIfAbsent(type, t -> counter("lmcache4j_controller_messages_total{socket=\""
                    + socket.label() + "\",type=\"" + t + "\"}"));
        }
        a.increment();
    }

    /** A frame that did not decode (bad msgpack, wrong field types, trailing bytes, beyond the caps). */
    public void malformed(Socket socket) {
        count("lmcache4j_controller_malformed_messages_total{socket=\"" + socket.label() + "\"}");
    }

    /** A well-formed message whose type is unknown, or not one this socket serves. */
    public void unknown(Socket socket) {
        count("lmcache4j_controller_unknown_messages_total{socket=\"" + socket.label() + "\"}");
    }

    /** Admits/evicts not indexed, by reason ({@code syncing}, {@code unregistered}, {@code limit}). */
    public void opsDiscarded(String reason, long n) {
        counter("lmcache4j_controller_ops_discarded_total{reason=\"" + reason + "\"}").add(n);
    }

    /** Admits and evicts applied to the index. */
    public void opsApplied(long n) {
        counter("lmcache4j_controller_ops_applied_total").add(n);
    }

    /** A control message to a worker that timed out or failed ({@code timeout}, {@code error}). */
    public void forwardFailed(String reason) {
        count("lmcache4j_controller_forward_failures_total{reason=\"" + reason + "\"}");
    }

    /**
     * Work refused at one of the caps or for another's identity ({@code what}: {@code workers},
     * {@code orchestrations}, {@code identity};
     * refused index admits are {@code ops_discarded_total{reason="entries_limit"}}).
     */
    public void refused(String what) {
        count("lmcache4j_controller_refused_total{what=\"" + what + "\"}");
    }

    /** Workers dropped for missing heartbeats. */
    public void workerExpired() {
        count("lmcache4j_controller_workers_expired_total");
    }

    /** An HTTP request answered with {@code status}. */
    public void http(String path, int status) {
        count("lmcache4j_controller_http_requests_total{path=\"" + path + "\",status=\"" + status + "\"}");
    }

    /** One lookup's latency (hashing and index probes). */
    public void lookup(long nanos) {
        lookups.increment();
        lookupNanos.add(nanos);
        double s = nanos / 1e9;
        int i = 0;
        while (i < LOOKUP_BUCKETS.length && s > LOOKUP_BUCKETS[i]) {
            i++;
        }
        lookupBuckets[i].increment();
    }

    /** A gauge read when {@code /metrics} is rendered. */
    public void gauge(String name, LongSupplier value) {
        gauges.put(name, value);
    }

    /** A counter kept elsewhere (a {@code _total} name), read when {@code /metrics} is rendered. */
    public void counter(String name, LongSupplier value) {
        counterReads.put(name, value);
    }

    /** The value of a counter (name with labels, as rendered); 0 when never counted. */
    public long value(String series) {
        LongAdder a = counters.get(series);
        return a == null ? 0 : a.sum();
    }

    /** The sum of every series of a counter whose name (before the labels) is {@code name}. */
    public long total(String name) {
        long sum = 0;
        for (Map.Entry<String, LongAdder> e : counters.entrySet()) {
            String k = e.getKey();
            int brace = k.indexOf('{');
            if ((brace < 0 ? k : k.substring(0, brace)).equals(name)) {
                sum += e.getValue().sum();
            }
        }
        return sum;
    }

    private void count(String series) {
        counter(series).increment();
    }

    private LongAdder counter(String series) {
        LongAdder a = counters.get(series);
        return a != null ? a : counters.computeIfAbsent(series, k -> new LongAdder());
    }

    /** Every series in Prometheus' text format. */
    public String render() {
        StringBuilder sb = new StringBuilder(4096);
        Map<String, Map<String, Long>> byName = new TreeMap<>();
        counters.forEach((series, adder) -> {
            int brace = series.indexOf('{');
            String name = brace < 0 ? series : series.substring(0, brace);
            byName.computeIfAbsent(name, k -> new TreeMap<>()).put(series, adder.sum());
        });
        byName.forEach((name, series) -> {
            sb.append("# TYPE ").append(name).append(" counter\n");
            series.forEach((s, v) -> sb.append(s).append(' ').append(v).append('\n'));
        });
        new TreeMap<>(counterReads).forEach((name, value) ->
                sb.append("# TYPE ").append(name).append(" counter\n").append(name).append(' ').append(value.getAsLong()).append('\n'));
        new TreeMap<>(gauges).forEach((name, value) ->
                sb.append("# TYPE ").append(name).append(" gauge\n").append(name).append(' ').append(value.getAsLong()).append('\n'));
        String h = "lmcache4j_controller_lookup_seconds";
        sb.append("# HELP ").append(h).append(" time to hash a lookup's tokens and probe the index\n");
        sb.append("# TYPE ").append(h).append(" histogram\n");
        long cumulative = 0;
        for (int i = 0; i < LOOKUP_BUCKETS.length; i++) {
            cumulative += lookupBuckets[i].sum();
            sb.append(h).append("_bucket{le=\"").append(String.format(Locale.ROOT, "%g", LOOKUP_BUCKETS[i]))
                    .append("\"} ").append(cumulative).append('\n');
        }
        cumulative += lookupBuckets[LOOKUP_BUCKETS.length].sum();
        sb.append(h).append("_bucket{le=\"+Inf\"} ").append(cumulative).append('\n');
        sb.append(h).append("_sum ").append(String.format(Locale.ROOT, "%.9f", lookupNanos.sum() / 1e9)).append('\n');
        sb.append(h).append("_count ").append(lookups.sum()).append('\n');
        return sb.toString();
    }
}
