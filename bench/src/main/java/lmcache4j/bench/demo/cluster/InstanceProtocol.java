package lmcache4j.bench.demo.cluster;

import java.net.URLDecoder;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;

import lmcache4j.bench.demo.Workload;
import lmcache4j.engine.json.Json;

/**
 * The request API between the demo process and an instance process: one command a line on the
 * instance's stdin, one JSON object a line on its stdout. A pipe between a parent and the child it
 * started: no socket, so nothing else can reach it. Tokens travel as comma-separated decimals.
 * <ul>
 *   <li>{@code admit ID TOKENS}: the instance hashes the prompt (so it can resolve the folded
 *       hashes of the scheduler's lookup that follows) → {@code {"event":"admitted"}};</li>
 *   <li>{@code serve ID HIT INDEX KIND SUBJECT PROMPT_LENGTH TOKENS}: retrieve (consuming the
 *       prefetch of lookup ID, which found HIT tokens), verify, compute, store the sequence
 *       (prompt, then response) → {@code {"event":"served","retrieved":N,...}};</li>
 *   <li>{@code stats} → {@code {"event":"stats",...}};</li>
 *   <li>{@code exit} (or end of input): close, then {@code {"event":"closed"}} or {@code {"event":"leak"}}.</li>
 * </ul>
 */
final class InstanceProtocol {
    static final String EXIT = "exit";

    private InstanceProtocol() {
    }

    sealed interface Command permits Admit, Serve, Stats {
    }

    record Admit(String lookupId, int[] prompt) implements Command {
    }

    record Serve(String lookupId, int hitTokens, Workload.Request request) implements Command {
    }

    record Stats() implements Command {
    }

    static String admit(String lookupId, int[] prompt) {
        return "admit " + lookupId + " " + tokens(prompt, 0, prompt.length);
    }

    static String serve(String lookupId, int hitTokens, Workload.Request r) {
        int[] sequence = r.sequence();
        return "serve " + lookupId + " " + hitTokens + " " + r.index() + " " + r.kind().name() + " "
                + URLEncoder.encode(r.subject(), StandardCharsets.UTF_8) + " " + r.prompt().length + " "
                + tokens(sequence, 0, sequence.length);
    }

    static String stats() {
        return "stats";
    }

    static Command parse(String line) {
        String[] f = line.split(" ", -1);
        switch (f[0]) {
            case "admit" -> {
                require(f, 3, line);
                return new Admit(f[1], tokens(f[2]));
            }
            case "serve" -> {
                require(f, 8, line);
                int[] sequence = tokens(f[7]);
                int promptLength = Integer.parseInt(f[6]);
                if (promptLength < 0 || promptLength > sequence.length) {
                    throw new IllegalArgumentException("prompt length " + promptLength + " of " + sequence.length + " tokens");
                }
                Workload.Request r = new Workload.Request(Integer.parseInt(f[3]), Workload.Kind.valueOf(f[4]),
                        URLDecoder.decode(f[5], StandardCharsets.UTF_8), Arrays.copyOf(sequence, promptLength),
                        Arrays.copyOfRange(sequence, promptLength, sequence.length));
                return new Serve(f[1], Integer.parseInt(f[2]), r);
            }
            case "stats" -> {
                return new Stats();
            }
            default -> throw new IllegalArgumentException("unknown command '" + f[0] + "'");
        }
    }

    /** One answer line: {@code {"event": name, ...fields}}. */
    static String event(String name, Map<String, Object> fields) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("event", name);
        m.putAll(fields);
        return Json.write(m);
    }

    private static void require(String[] f, int n, String line) {
        if (f.length != n) {
            throw new IllegalArgumentException(f[0] + " takes " + (n - 1) + " fields, got " + (f.length - 1) + ": "
                    + line.substring(0, Math.min(line.length(), 80)));
        }
    }

    private static String tokens(int[] t, int from, int to) {
        StringBuilder sb = new StringBuilder((to - from) * 7);
        for (int i = from; i < to; i++) {
            sb.append(i == from ? "" : ",").append(t[i]);
        }
        return sb.toString();
    }

    private static int[] tokens(String text) {
        if (text.isEmpty()) {
            return new int[0];
        }
        String[] parts = text.split(",");
        int[] out = new int[parts.length];
        for (int i = 0; i < parts.length; i++) {
            out[i] = Integer.parseInt(parts[i]);
        }
        return out;
    }
}
