package lmcache4j.engine.remote;

import java.net.URI;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;

/** What the connectors read from their URLs, in one place. */
public final class RemoteUrls {
    private RemoteUrls() {
    }

    /** The query parameters of {@code uri}, decoded, in order; a parameter without {@code =} has an empty value. */
    public static Map<String, String> query(URI uri) {
        Map<String, String> q = new LinkedHashMap<>();
        String raw = uri.getRawQuery();
        if (raw == null || raw.isEmpty()) {
            return q;
        }
        for (String part : raw.split("&")) {
            if (part.isEmpty()) {
                continue;
            }
            int eq = part.indexOf('=');
            String k = URLDecoder.decode(eq < 0 ? part : part.substring(0, eq), StandardCharsets.UTF_8);
            String v = eq < 0 ? "" : URLDecoder.decode(part.substring(eq + 1), StandardCharsets.UTF_8);
            q.put(k, v);
        }
        return q;
    }
}
