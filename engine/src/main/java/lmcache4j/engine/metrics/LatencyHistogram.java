package lmcache4j.engine.metrics;

import java.util.concurrent.TimeUnit;

import org.HdrHistogram.Histogram;
import org.HdrHistogram.Recorder;

/**
 * A thread-safe histogram of durations (or other positive values) backed by HdrHistogram's
 * {@link Recorder}: recording is wait-free, and a snapshot folds the interval into a cumulative
 * histogram. Exported to Prometheus with LMCache's bucket bounds.
 */
public final class LatencyHistogram {
    private final String name;
    private final String help;
    private final double[] bucketBounds;
    private final double unitDivisor;
    private final Recorder recorder;
    private final Histogram total;

    /**
     * @param bucketBounds Prometheus bucket upper bounds, in the exported unit
     * @param unitDivisor  recorded value ÷ this = the exported unit (1e9 for nanoseconds → seconds)
     * @param highest      the largest value to record; larger values are clamped
     */
    public LatencyHistogram(String name, String help, double[] bucketBounds, double unitDivisor, long highest) {
        this.name = name;
        this.help = help;
        this.bucketBounds = bucketBounds.clone();
        this.unitDivisor = unitDivisor;
        this.recorder = new Recorder(highest, 3);
        this.total = new Histogram(highest, 3);
    }

    /** Records one value in the recorded unit; negative values count as 0, huge ones are clamped. */
    public void record(long value) {
        recorder.recordValue(Math.min(Math.max(value, 0), total.getHighestTrackableValue()));
    }

    /** Folds recordings so far into the cumulative histogram and returns a copy of it. */
    public synchronized Histogram snapshot() {
        total.add(recorder.getIntervalHistogram());
        return total.copy();
    }

    public String name() {
        return name;
    }

    String help() {
        return help;
    }

    double[] bucketBounds() {
        return bucketBounds;
    }

    double unitDivisor() {
        return unitDivisor;
    }

    /** Seconds buckets of LMCache's {@code time_to_store}/{@code time_to_retrieve}: 1 ms … 10 s. */
    static double[] secondsBuckets() {
        return new double[] {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10};
    }

    /** Tokens-per-second buckets of LMCache's {@code store_speed}/{@code retrieve_speed}: 1 … 65536. */
    static double[] speedBuckets() {
        double[] b = new double[17];
        for (int i = 0; i < b.length; i++) {
            b[i] = 1L << i;
        }
        return b;
    }

    static long maxNanos() {
        return TimeUnit.MINUTES.toNanos(10);
    }
}
