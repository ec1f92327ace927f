package lmcache4j.bench.trace;

import java.io.BufferedInputStream;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.zip.GZIPInputStream;

import lmcache4j.engine.json.Json;
import lmcache4j.engine.json.JsonException;

/**
 * Reads request traces in Mooncake's JSON-lines format ({@link Trace}), plain or gzip-compressed
 * (told apart by the gzip magic bytes, not the name). Blank lines are skipped and fields other than
 * the four below are ignored (other tools add session ids); anything else wrong is a
 * {@link MalformedTraceException} naming the line and what to fix:
 *
 * <pre>{"timestamp": 3000, "input_length": 13544, "output_length": 71, "hash_ids": [0, 219, 220, ...]}</pre>
 *
 * {@code hash_ids} must hold one id per block of the prompt, the last one partial:
 * {@code ceil(input_length / blockTokens)} of them.
 */
public final class TraceFile {
    /** The trace bundled with the benchmark: Mooncake's conversation trace (FAST '25), gzip-compressed. */
    public static final String BUNDLED = "mooncake_conversation_trace.jsonl.gz";
    /** Mooncake's block size. */
    public static final int MOONCAKE_BLOCK_TOKENS = 512;
    /** A line longer than this is refused before it is parsed (a prompt of 2^20 blocks is far beyond any model). */
    static final int MAX_LINE_CHARS = 16 << 20;

    private TraceFile() {
    }

    /** The bundled conversation trace (12,031 requests; see the NOTICE beside it). */
    public static Trace bundled() {
        InputStream in = TraceFile.class.getResourceAsStream(BUNDLED);
        if (in == null) {
            throw new IllegalStateException("the bundled trace " + BUNDLED + " is missing from the bench module's resources");
        }
        try (in) {
            return read(in, "bundled " + BUNDLED + " (Mooncake conversation trace)", MOONCAKE_BLOCK_TOKENS);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the bundled trace: " + e.getMessage(), e);
        }
    }

    /** Reads the trace at {@code path} (plain or gzip). */
    public static Trace read(Path path, int blockTokens) {
        try (InputStream in = Files.newInputStream(path)) {
            return read(in, path.toString(), blockTokens);
        } catch (NoSuchFileException e) {
            throw new IllegalArgumentException("trace file " + path + " does not exist");
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read trace file " + path + ": " + e.getMessage(), e);
        }
    }

    /** Reads a trace from {@code in} (plain or gzip); {@code source} names it in messages. */
    public static Trace read(InputStream in, String source, int blockTokens) throws IOException {
        if (blockTokens < 1) {
            throw new IllegalArgumentException("block tokens must be positive, was " + blockTokens);
        }
        BufferedInputStream buffered = new BufferedInputStream(in, 1 << 16);
        buffered.mark(2);
        boolean gzip = buffered.read() == 0x1f & buffered.read() == 0x8b;
        buffered.reset();
        InputStream body = gzip ? new GZIPInputStream(buffered, 1 << 16) : buffered;
        BufferedReader lines = new BufferedReader(new InputStreamReader(body, StandardCharsets.UTF_8), 1 << 16);
        Map<Long, Integer> dense = new HashMap<>();
        List<Trace.Request> requests = new ArrayList<>();
        int number = 0;
        for (String line = lines.readLine(); line != null; line = lines.readLine()) {
            number++;
            if (line.isBlank()) {
                continue;
            }
            requests.add(parse(line, number, source, blockTokens, dense));
        }
        if (requests.isEmpty()) {
            throw new MalformedTraceException(source + " holds no requests (one JSON object per line expected)");
        }
        return new Trace(source, blockTokens, requests, dense.size());
    }

    private static Trace.Request parse(String line, int number, String source, int blockTokens, Map<Long, Integer> dense) {
        if (line.length() > MAX_LINE_CHARS) {
            throw malformed(source, number, "the line is " + line.length() + " characters long; at most " + MAX_LINE_CHARS);
        }
        Map<String, Object> o;
        try {
            o = Json.parseObject(line);
        } catch (JsonException e) {
            throw malformed(source, number, "not a JSON object: " + e.getMessage());
        }
        long timestamp = whole(o, "timestamp", Long.MAX_VALUE, source, number);
        int input = (int) whole(o, "input_length", Integer.MAX_VALUE, source, number);
        int output = (int) whole(o, "output_length", Integer.MAX_VALUE, source, number);
        Object ids = o.get("hash_ids");
        if (!(ids instanceof List<?> list)) {
            throw malformed(source, number, "\"hash_ids\" must be an array of block ids, was "
                    + (ids == null ? "missing" : Json.typeName(ids)));
        }
        int expected = (int) ((input + (long) blockTokens - 1) / blockTokens);
        if (list.size() != expected) {
            throw malformed(source, number, "\"hash_ids\" has " + list.size() + " ids but input_length " + input + " is "
                    + expected + " blocks of " + blockTokens + " tokens (one id per block, the last may be partial; "
                    + "another block size: --block-tokens)");
        }
        int[] blocks = new int[list.size()];
        for (int i = 0; i < blocks.length; i++) {
            if (!(list.get(i) instanceof Long id) || id < 0) {
                throw malformed(source, number, "\"hash_ids\"[" + i + "] must be a whole number >= 0, was "
                        + Json.write(list.get(i)));
            }
            Integer d = dense.get(id);
            if (d == null) {
                d = dense.size();
                dense.put(id, d);
            }
            blocks[i] = d;
        }
        return new Trace.Request(number, timestamp, input, output, blocks);
    }

    private static long whole(Map<String, Object> o, String field, long max, String source, int number) {
        Object v = o.get(field);
        if (!(v instanceof Long n) || n < 0 || n > max) {
            throw malformed(source, number, "\"" + field + "\" must be a whole number from 0 to " + max + ", was "
                    + (v == null ? "missing" : Json.write(v)));
        }
        return n;
    }

    private static MalformedTraceException malformed(String source, int line, String what) {
        return new MalformedTraceException(source + " line " + line + ": " + what);
    }
}
