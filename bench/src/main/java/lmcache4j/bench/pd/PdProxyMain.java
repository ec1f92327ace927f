package lmcache4j.bench.pd;

import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.logging.Level;
import java.util.logging.Logger;

import lmcache4j.engine.json.Json;
import lmcache4j.server.pd.PdProxy;

/**
 * The proxy process {@code demo --model --pd} and {@code bench pd} start (what
 * {@code ./lmcache4j pd-proxy} runs): prints {@code {"event":"ready","http_port":N,"notice_port":M}}
 * and serves until its input ends.
 *
 * <p>Argument: a JSON object: {@code host}, {@code http_port}, {@code notice_port},
 * {@code prefillers}, {@code decoders}, {@code token_file} (a file holding the token), and
 * {@code notice_timeout_ms}.
 */
public final class PdProxyMain {
    private PdProxyMain() {
    }

    public static void main(String[] args) throws IOException {
        PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8);
        System.setOut(System.err);
        Logger.getLogger("lmcache4j").setLevel(Level.WARNING);
        Map<String, Object> spec = Json.parseObject(args[0]);
        byte[] token = Files.readString(Path.of((String) spec.get("token_file"))).strip().getBytes(StandardCharsets.UTF_8);
        @SuppressWarnings("unchecked")
        List<String> prefillers = (List<String>) spec.get("prefillers");
        @SuppressWarnings("unchecked")
        List<String> decoders = (List<String>) spec.get("decoders");
        PdProxy.Settings s = new PdProxy.Settings((String) spec.get("host"), ((Number) spec.get("http_port")).intValue(),
                ((Number) spec.get("notice_port")).intValue(), prefillers, decoders, token,
                Duration.ofMillis(((Number) spec.get("notice_timeout_ms")).longValue()), Duration.ofMinutes(10), 64, 4_096);
        try (PdProxy proxy = PdProxy.start(s)) {
            Map<String, Object> ready = new LinkedHashMap<>();
            ready.put("event", "ready");
            ready.put("http_port", (long) proxy.httpAddress().getPort());
            ready.put("notice_port", (long) proxy.noticePort());
            out.println(Json.write(ready));
            PdRoleMain.waitForEndOfInput(System.in);
        }
        out.println(Json.write(Map.of("event", "closed")));
        System.exit(0);
    }

    /** The spec's JSON. */
    static String spec(String host, int noticePort, List<String> prefillers, List<String> decoders, Path tokenFile,
                       long noticeTimeoutMs) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("host", host);
        m.put("http_port", 0L);
        m.put("notice_port", (long) noticePort);
        m.put("prefillers", prefillers);
        m.put("decoders", decoders);
        m.put("token_file", tokenFile.toString());
        m.put("notice_timeout_ms", noticeTimeoutMs);
        return Json.write(m);
    }
}
