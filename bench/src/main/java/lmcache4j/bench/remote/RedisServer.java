package lmcache4j.bench.remote;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * A {@code redis-server} on a free loopback port for the remote benchmark: no persistence
 * ({@code --save '' --appendonly no}), {@code --proto-max-bulk-len 1gb}. Closing it stops the process.
 */
public final class RedisServer implements AutoCloseable {
    private final int port;
    private final Path log;
    private final Process process;

    private RedisServer(int port, Path log, Process process) {
        this.port = port;
        this.log = log;
        this.process = process;
    }

    /** Starts a server on a free loopback port and waits (up to 20 s) until it answers PING. */
    public static RedisServer start() throws IOException, InterruptedException {
        String exe = executable("redis-server").orElseThrow(() -> new IllegalStateException(
                "redis-server is not installed (apt-get install -y redis-server); bench redis needs a real Redis"));
        int port;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            port = s.getLocalPort();
        }
        Path log = Files.createTempFile("lmcache4j-redisbench-" + port + "-", ".log");
        Process p = new ProcessBuilder(List.of(exe, "--port", Integer.toString(port), "--bind", "127.0.0.1",
                "--save", "", "--appendonly", "no", "--protected-mode", "no", "--proto-max-bulk-len", "1gb"))
                .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile())).start();
        RedisServer r = new RedisServer(port, log, p);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (System.nanoTime() < deadline) {
            if (!p.isAlive()) {
                String text = Files.readString(log);
                r.close();
                throw new IllegalStateException("redis-server exited with " + p.exitValue() + ":\n" + text);
            }
            if (r.pings()) {
                return r;
            }
            Thread.sleep(20);
        }
        String text = Files.readString(log);
        r.close();
        throw new IllegalStateException("redis-server on port " + port + " did not answer PING within 20 s:\n" + text);
    }

    public int port() {
        return port;
    }

    /** The server's version, from {@code redis-server --version}'s first words, or "unknown". */
    public static String version() {
        return executable("redis-server").map(exe -> {
            try {
                Process p = new ProcessBuilder(exe, "--version").redirectErrorStream(true).start();
                String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
                p.waitFor(10, TimeUnit.SECONDS);
                int v = out.indexOf("v=");
                return v < 0 ? out : out.substring(v + 2).split("\\s")[0];
            } catch (IOException e) {
                return "unknown";
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return "unknown";
            }
        }).orElse("unknown");
    }

    private boolean pings() {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 500);
            s.setSoTimeout(1000);
            OutputStream out = s.getOutputStream();
            out.write("PING\r\n".getBytes(StandardCharsets.US_ASCII));
            out.flush();
            InputStream in = s.getInputStream();
            byte[] buf = new byte[7];
            int n = in.readNBytes(buf, 0, 7);
            return n == 7 && new String(buf, StandardCharsets.US_ASCII).equals("+PONG\r\n");
        } catch (IOException e) {
            return false;
        }
    }

    /** An executable on PATH or in the usual directories. */
    public static Optional<String> executable(String name) {
        for (String dir : System.getenv().getOrDefault("PATH", "").split(File.pathSeparator)) {
            Path p = Path.of(dir.isEmpty() ? "." : dir, name);
            if (Files.isExecutable(p)) {
                return Optional.of(p.toString());
            }
        }
        for (String dir : List.of("/usr/bin", "/usr/local/bin", "/usr/sbin")) {
            Path p = Path.of(dir, name);
            if (Files.isExecutable(p)) {
                return Optional.of(p.toString());
            }
        }
        return Optional.empty();
    }

    /** Stops the server (SIGTERM, then SIGKILL after 10 s) and deletes its log. */
    @Override
    public void close() {
        try {
            process.destroy();
            if (!process.waitFor(10, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                process.waitFor(10, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        }
        try {
            Files.deleteIfExists(log);
        } catch (IOException ignored) {
            // a temp file
        }
    }
}
