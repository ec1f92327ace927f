package lmcache4j.bench.json;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.DoubleStream;

import lmcache4j.engine.json.Json;

/**
 * One JSON object of a {@code --json} report, keys in insertion order, written by the project's
 * codec ({@link Json}). Numbers that are not finite, and absent values, are written as {@code null}.
 */
public final class ReportJson {
    private final Map<String, Object> fields = new LinkedHashMap<>();

    /** A whole number. */
    public ReportJson integer(String key, long value) {
        fields.put(key, value);
        return this;
    }

    /** A whole number, or null when absent. */
    public ReportJson integer(String key, Optional<Long> value) {
        fields.put(key, value.orElse(null));
        return this;
    }

    /** A number with {@code decimals} digits after the point. */
    public ReportJson number(String key, double value, int decimals) {
        fields.put(key, Json.fixed(value, decimals));
        return this;
    }

    /** A number with {@code decimals} digits after the point, or null when absent. */
    public ReportJson number(String key, Optional<Double> value, int decimals) {
        return number(key, value.orElse(Double.NaN), decimals);
    }

    /** An array of numbers with {@code decimals} digits after the point. */
    public ReportJson numbers(String key, double[] values, int decimals) {
        List<Number> list = DoubleStream.of(values).mapToObj(v -> Json.fixed(v, decimals)).toList();
        fields.put(key, list);
        return this;
    }

    public ReportJson bool(String key, boolean value) {
        fields.put(key, value);
        return this;
    }

    /** A boolean, or null when absent. */
    public ReportJson bool(String key, Optional<Boolean> value) {
        fields.put(key, value.orElse(null));
        return this;
    }

    public ReportJson string(String key, String value) {
        fields.put(key, value);
        return this;
    }

    /** An array of objects. */
    public ReportJson objects(String key, List<ReportJson> values) {
        fields.put(key, values.stream().map(v -> (Object) v.fields).toList());
        return this;
    }

    /** A nested object. */
    public ReportJson object(String key, ReportJson value) {
        fields.put(key, value.fields);
        return this;
    }

    @Override
    public String toString() {
        return Json.write(fields);
    }
}
