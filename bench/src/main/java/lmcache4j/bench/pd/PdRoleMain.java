package lmcache4j.bench.pd;

import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.logging.Level;
import java.util.logging.Logger;

import com.github.tjake.jlama.model.AbstractModel;

import lmcache4j.bench.model.ModelSource;
import lmcache4j.engine.config.ConfigLoader;
import lmcache4j.engine.config.LMCacheEngineConfig;
import lmcache4j.engine.json.Json;
import lmcache4j.server.pd.PdWorkerServer;

/**
 * The process of one PD role that {@code demo --model --pd} and {@code bench pd} start (what
 * {@code ./lmcache4j pd-worker} runs, driven by a parent): loads the model, starts the role and its
 * HTTP API, prints {@code {"event":"ready","http_port":N}} on stdout, and at the end of its input closes
 * everything and prints {@code closed} (or {@code leak} with exit status 3 when the engine's close
 * found a leaked object).
 *
 * <p>Argument: a JSON object: {@code role}, {@code model_dir}, {@code model_name}, {@code host},
 * {@code port}, {@code config} (engine config entries).
 */
public final class PdRoleMain {
    private PdRoleMain() {
    }

    public static void main(String[] args) throws IOException {
        PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8);
        System.setOut(System.err);
        Logger.getLogger("lmcache4j").setLevel(Level.WARNING);
        Map<String, Object> spec = Json.parseObject(args[0]);
        JlamaPdWorker.Role role = JlamaPdWorker.Role.of((String) spec.get("role"));
        String host = (String) spec.get("host");
        ConfigLoader.Builder b = ConfigLoader.builder().environment(Map.of());
        @SuppressWarnings("unchecked")
        Map<String, Object> config = (Map<String, Object>) spec.get("config");
        config.forEach(b::set);
        LMCacheEngineConfig c = PdRoleConfig.build(role, b, host, System.err::println);
        ModelSource source = new ModelSource(Path.of((String) spec.get("model_dir")), (String) spec.get("model_name"), false);
        AbstractModel model = source.load();
        JlamaPdWorker worker;
        PdWorkerServer http;
        try {
            worker = JlamaPdWorker.start(role, model, source.name(), c);
        } catch (IOException | RuntimeException e) {
            e.printStackTrace();
            out.println(Json.write(Map.of("event", "failed", "message", String.valueOf(e))));
            model.close();
            System.exit(1);
            return;
        }
        try {
            http = PdWorkerServer.start(new InetSocketAddress(host, ((Number) spec.get("port")).intValue()), 16, worker,
                    worker.pdToken());
        } catch (IOException | RuntimeException e) {
            e.printStackTrace();
            out.println(Json.write(Map.of("event", "failed", "message", String.valueOf(e))));
            worker.close();
            model.close();
            System.exit(1);
            return;
        }
        Map<String, Object> ready = new LinkedHashMap<>();
        ready.put("event", "ready");
        ready.put("http_port", (long) http.address().getPort());
        out.println(Json.write(ready));
        waitForEndOfInput(System.in);
        int status = 0;
        http.close();
        try {
            worker.close(); // the engine's close: its allocators' leak checks
            out.println(Json.write(Map.of("event", "closed")));
        } catch (RuntimeException e) {
            e.printStackTrace();
            out.println(Json.write(Map.of("event", "leak", "message", String.valueOf(e))));
            status = 3;
        } finally {
            model.close();
        }
        System.exit(status);
    }

    static void waitForEndOfInput(InputStream in) throws IOException {
        byte[] b = new byte[256];
        while (in.read(b) >= 0) {
            // the parent says nothing; the end of input is the signal to close
        }
    }

    /** The spec's JSON. */
    static String spec(JlamaPdWorker.Role role, ModelSource model, String host, int port, Map<String, Object> config) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("role", role.label());
        m.put("model_dir", model.directory().toString());
        m.put("model_name", model.name());
        m.put("host", host);
        m.put("port", (long) port);
        m.put("config", config);
        return Json.write(m);
    }

}
