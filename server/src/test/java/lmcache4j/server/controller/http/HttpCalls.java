package lmcache4j.server.controller.http;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.HttpURLConnection;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;

/** A JSON client for tests, on the JDK's HttpURLConnection (java.base). */
public final class HttpCalls {
    /** A status and the body. */
    public record Reply(int status, String body) {
    }

    private HttpCalls() {
    }

    public static Reply post(InetSocketAddress server, String path, String body) throws IOException {
        return call(server, "POST", path, body.getBytes(StandardCharsets.UTF_8));
    }

    public static Reply get(InetSocketAddress server, String path) throws IOException {
        return call(server, "GET", path, null);
    }

    public static Reply call(InetSocketAddress server, String method, String path, byte[] body) throws IOException {
        HttpURLConnection c = (HttpURLConnection) URI.create("http://" + server.getHostString() + ":" + server.getPort() + path)
                .toURL().openConnection();
        c.setRequestMethod(method);
        c.setConnectTimeout(5000);
        c.setReadTimeout(10000);
        if (body != null) {
            c.setDoOutput(true);
            c.setFixedLengthStreamingMode(body.length);
            c.setRequestProperty("Content-Type", "application/json");
            try (OutputStream out = c.getOutputStream()) {
                out.write(body);
            } catch (IOException e) {
                // the server may answer (413) and close before the whole body is sent
            }
        }
        int status = c.getResponseCode();
        InputStream in = status >= 400 ? c.getErrorStream() : c.getInputStream();
        String text = in == null ? "" : new String(in.readAllBytes(), StandardCharsets.UTF_8);
        return new Reply(status, text);
    }
}
