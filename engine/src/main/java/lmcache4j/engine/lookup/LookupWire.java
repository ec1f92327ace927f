package lmcache4j.engine.lookup;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The frames of LMCache's asynchronous lookup service (LMCache/LMCache
 * {@code lmcache/v1/lookup_client/lmcache_async_lookup_client.py} at commit
 * b8788cd32e1466e259c3e899ad462009a884bc40), byte for byte.
 *
 * <p>A request is 4 frames, and one multipart message may carry several requests back to back:
 * {@code [lookup_id utf-8, msgpack(list of chunk hashes), msgpack(list of chunk token counts),
 * request_configs utf-8]}, the configs written {@code k%v@k%v} (empty for none). A response is 2
 * frames: {@code [lookup_id utf-8, hit tokens as 4 bytes big-endian]}.
 *
 * <p>Decoding is strict and bounded: anything else is a {@link MalformedLookupMessageException}.
 */
public final class LookupWire {
    /** Frames per request. */
    public static final int REQUEST_FRAMES = 4;
    /** Frames per response. */
    public static final int RESPONSE_FRAMES = 2;
    /** Most requests one multipart message may carry. */
    public static final int MAX_REQUESTS_PER_MESSAGE = 1024;
    /** Longest lookup id, in bytes. */
    public static final int MAX_LOOKUP_ID_BYTES = 4096;
    /** Most chunks one request may name (a 16M-token prompt in 16-token chunks). */
    public static final int MAX_CHUNKS = 1 << 20;

    private LookupWire() {
    }

    // ---- requests ---------------------------------------------------------------------------

    /** The 4 frames of {@code request}, as LMCache's client builds them. */
    public static List<byte[]> encodeRequest(LookupRequest request) {
        long[] tokens = new long[request.chunkTokens().length];
        int[] counts = request.chunkTokens();
        for (int i = 0; i < counts.length; i++) {
            tokens[i] = counts[i];
        }
        return List.of(request.lookupId().getBytes(StandardCharsets.UTF_8),
                MsgpackInts.encodeUnsigned(request.chunkHashes()), MsgpackInts.encodeUnsigned(tokens),
                encodeConfigs(request.requestConfigs()).getBytes(StandardCharsets.UTF_8));
    }

    /** The requests of one multipart message (4 frames each). */
    public static List<LookupRequest> decodeRequests(List<byte[]> frames) throws MalformedLookupMessageException {
        if (frames.isEmpty() || frames.size() % REQUEST_FRAMES != 0) {
            throw new MalformedLookupMessageException("a lookup message has 4 frames per request, got " + frames.size());
        }
        if (frames.size() / REQUEST_FRAMES > MAX_REQUESTS_PER_MESSAGE) {
            throw new MalformedLookupMessageException("a lookup message carries at most " + MAX_REQUESTS_PER_MESSAGE
                    + " requests, got " + frames.size() / REQUEST_FRAMES);
        }
        List<LookupRequest> requests = new ArrayList<>(frames.size() / REQUEST_FRAMES);
        for (int i = 0; i < frames.size(); i += REQUEST_FRAMES) {
            String at = "request " + i / REQUEST_FRAMES;
            String id = lookupId(frames.get(i), at);
            long[] hashes = chunkList(frames.get(i + 1), at + ", frame 1 (chunk hashes)");
            long[] tokens = chunkList(frames.get(i + 2), at + ", frame 2 (chunk token counts)");
            if (hashes.length != tokens.length) {
                throw new MalformedLookupMessageException(at + ": " + hashes.length + " chunk hashes but "
                        + tokens.length + " token counts");
            }
            int[] counts = new int[tokens.length];
            for (int c = 0; c < tokens.length; c++) {
                if (tokens[c] < 1 || tokens[c] > Integer.MAX_VALUE) {
                    throw new MalformedLookupMessageException(at + ": chunk " + c + " has " + Long.toUnsignedString(tokens[c])
                            + " tokens; expected 1.." + Integer.MAX_VALUE);
                }
                counts[c] = (int) tokens[c];
            }
            Map<String, String> configs = decodeConfigs(utf8(frames.get(i + 3), at + ", frame 3 (request configs)"),
                    at + ", frame 3 (request configs)");
            requests.add(new LookupRequest(id, hashes, counts, configs));
        }
        return requests;
    }

    private static long[] chunkList(byte[] frame, String what) throws MalformedLookupMessageException {
        long[] values = MsgpackInts.decode(frame, what);
        if (values.length > MAX_CHUNKS) {
            throw new MalformedLookupMessageException(what + ": " + values.length + " chunks, at most " + MAX_CHUNKS);
        }
        return values;
    }

    /**
     * LMCache's request-config string: {@code k%v} pairs joined by {@code @}, empty for none.
     *
     * @throws IllegalArgumentException for a key or value the form cannot carry ({@code @} anywhere, {@code %} in a key)
     */
    public static String encodeConfigs(Map<String, String> configs) {
        StringBuilder sb = new StringBuilder();
        for (Map.Entry<String, String> e : configs.entrySet()) {
            if (e.getKey().indexOf('@') >= 0 || e.getKey().indexOf('%') >= 0 || e.getValue().indexOf('@') >= 0) {
                throw new IllegalArgumentException("request config " + e.getKey() + "=" + e.getValue()
                        + " cannot travel in LMCache's k%v@k%v form ('@' anywhere or '%' in the key)");
            }
            if (!sb.isEmpty()) {
                sb.append('@');
            }
            sb.append(e.getKey()).append('%').append(e.getValue());
        }
        return sb.toString();
    }

    private static Map<String, String> decodeConfigs(String text, String what) throws MalformedLookupMessageException {
        Map<String, String> configs = new LinkedHashMap<>();
        if (text.isEmpty()) {
            return configs;
        }
        for (String pair : text.split("@", -1)) {
            int split = pair.indexOf('%');
            if (split < 0) {
                throw new MalformedLookupMessageException(what + ": '" + pair + "' is not of the form key%value");
            }
            configs.put(pair.substring(0, split), pair.substring(split + 1)); // a repeated key: the last wins, as in Python
        }
        return configs;
    }

    // ---- responses --------------------------------------------------------------------------

    /** The 2 frames of {@code response}, as LMCache's server builds them. */
    public static List<byte[]> encodeResponse(LookupResponse response) {
        return List.of(response.lookupId().getBytes(StandardCharsets.UTF_8),
                ByteBuffer.allocate(4).putInt(response.hitTokens()).array());
    }

    /** The response in one multipart message. */
    public static LookupResponse decodeResponse(List<byte[]> frames) throws MalformedLookupMessageException {
        if (frames.size() != RESPONSE_FRAMES) {
            throw new MalformedLookupMessageException("a lookup response has 2 frames, got " + frames.size());
        }
        String id = lookupId(frames.get(0), "response");
        byte[] hits = frames.get(1);
        if (hits.length != 4) {
            throw new MalformedLookupMessageException("response frame 1 (hit tokens) has " + hits.length
                    + " bytes; expected 4");
        }
        int value = ByteBuffer.wrap(hits).getInt();
        if (value < 0) {
            throw new MalformedLookupMessageException("response: " + Integer.toUnsignedString(value)
                    + " hit tokens is more than any request has");
        }
        return new LookupResponse(id, value);
    }

    // ---- text frames ------------------------------------------------------------------------

    private static String lookupId(byte[] frame, String at) throws MalformedLookupMessageException {
        if (frame.length > MAX_LOOKUP_ID_BYTES) {
            throw new MalformedLookupMessageException(at + ": lookup id of " + frame.length + " bytes, at most "
                    + MAX_LOOKUP_ID_BYTES);
        }
        return utf8(frame, at + ", frame 0 (lookup id)");
    }

    private static String utf8(byte[] frame, String what) throws MalformedLookupMessageException {
        try {
            return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(frame)).toString();
        } catch (CharacterCodingException e) {
            throw new MalformedLookupMessageException(what + ": not UTF-8 (" + e.getMessage() + ")");
        }
    }
}
