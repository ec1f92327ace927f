package lmcache4j.server.http;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import lmcache4j.engine.json.Json;

/**
 * Typed access to a request's JSON object, each failure a {@link BadRequestException} that names
 * the field and what was expected.
 */
public record JsonBody(Map<String, Object> fields) {
    /** A required string field. */
    public String string(String name) {
        return optionalString(name).orElseThrow(() -> new BadRequestException("missing field \"" + name + "\" (a string)"));
    }

    /** An optional string field (absent or null: empty). */
    public Optional<String> optionalString(String name) {
        Object v = fields.get(name);
        if (v == null) {
            return Optional.empty();
        }
        if (!(v instanceof String s)) {
            throw new BadRequestException("field \"" + name + "\" must be a string, got " + Json.typeName(v));
        }
        return Optional.of(s);
    }

    /** An optional boolean field. */
    public Optional<Boolean> optionalBoolean(String name) {
        Object v = fields.get(name);
        if (v == null) {
            return Optional.empty();
        }
        if (!(v instanceof Boolean b)) {
            throw new BadRequestException("field \"" + name + "\" must be true or false, got " + Json.typeName(v));
        }
        return Optional.of(b);
    }

    /** A required array of token ids (integers 0..2^31-1). */
    public int[] tokens(String name) {
        return optionalTokens(name).orElseThrow(() -> new BadRequestException("missing field \"" + name
                + "\" (an array of token ids)"));
    }

    /** An optional array of token ids (absent or null: empty). */
    public Optional<int[]> optionalTokens(String name) {
        Object v = fields.get(name);
        if (v == null) {
            return Optional.empty();
        }
        if (!(v instanceof List<?> list)) {
            throw new BadRequestException("field \"" + name + "\" must be an array of token ids, got " + Json.typeName(v));
        }
        int[] out = new int[list.size()];
        for (int i = 0; i < out.length; i++) {
            if (!(list.get(i) instanceof Long t) || t < 0 || t > Integer.MAX_VALUE) {
                throw new BadRequestException("field \"" + name + "\"[" + i + "] must be a token id (an integer 0.."
                        + Integer.MAX_VALUE + "), got " + describe(list.get(i)));
            }
            out[i] = (int) (long) t;
        }
        return Optional.of(out);
    }

    /** An optional array of non-negative integers that fit an {@code int} (absent or null: empty). */
    public Optional<List<Integer>> optionalIntegers(String name) {
        Object v = fields.get(name);
        if (v == null) {
            return Optional.empty();
        }
        if (!(v instanceof List<?> list)) {
            throw new BadRequestException("field \"" + name + "\" must be an array of integers, got " + Json.typeName(v));
        }
        List<Integer> out = new ArrayList<>(list.size());
        for (int i = 0; i < list.size(); i++) {
            if (!(list.get(i) instanceof Long n) || n < 0 || n > Integer.MAX_VALUE) {
                throw new BadRequestException("field \"" + name + "\"[" + i + "] must be an integer 0.."
                        + Integer.MAX_VALUE + ", got " + describe(list.get(i)));
            }
            out.add((int) (long) n);
        }
        return Optional.of(List.copyOf(out));
    }

    /** A required array of two strings (LMCache's {@code (url, location)} positions). */
    public List<String> pair(String name) {
        Object v = fields.get(name);
        if (!(v instanceof List<?> list) || list.size() != 2 || !(list.get(0) instanceof String)
                || !(list.get(1) instanceof String)) {
            throw new BadRequestException("field \"" + name + "\" must be an array of two strings, got " + describe(v));
        }
        return List.of((String) list.get(0), (String) list.get(1));
    }

    private static String describe(Object v) {
        String text = v == null ? "null" : Json.write(v);
        return Json.typeName(v) + " " + (text.length() > 40 ? text.substring(0, 40) + "..." : text);
    }
}
