package lmcache4j.engine.remote.redis;

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
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * A real {@code redis-server} on a loopback port, for the Redis tests and the remote benchmark: no
 * persistence ({@code --save '' --appendonly no}), bound to 127.0.0.1, {@code DEBUG} allowed from
 * loopback clients (the timeout tests use {@code DEBUG SLEEP}). Closing it stops the process and
 * deletes its log. {@code ./lmcache4j test} installs the Debian package {@code redis-server} when it
 * is missing; without it the tests fail (they never skip).
 */
public final class RedisServerProcess implements AutoCloseable {
    private final int port;
    private final List<String> extraArgs;
    private final Path configFile; // first argument when set (sentinel mode needs a writable one)
    private final Path log;
    private Process process;

    private RedisServerProcess(int port, Path configFile, List<String> extraArgs) throws IOException {
        this.port = port;
        this.configFile = configFile;
        this.extraArgs = List.copyOf(extraArgs);
        this.log = Files.createTempFile("lmcache4j-redis-" + port + "-", ".log");
    }

    /** Starts a server on a free loopback port and waits until it answers PING. */
    public static RedisServerProcess start() throws IOException, InterruptedException {
        return start(List.of());
    }

    /** As {@link #start()}, with more {@code redis-server} arguments (the PING is on the plain port). */
    public static RedisServerProcess start(List<String> extraArgs) throws IOException, InterruptedException {
        return started(new RedisServerProcess(freePort(), null, extraArgs));
    }

    /** A Redis Sentinel on a free loopback port watching the master at {@code masterPort} under {@code name}. */
    public static RedisServerProcess startSentinel(String name, int masterPort, Path dir) throws IOException, InterruptedException {
        Path conf = Files.writeString(dir.resolve("sentinel.conf"), "sentinel monitor " + name + " 127.0.0.1 " + masterPort
                + " 1\nsentinel down-after-milliseconds " + name + " 1000\n");
        return started(new RedisServerProcess(freePort(), conf, List.of("--sentinel")));
    }

    /** Starts {@code r}; if it does not come up, stops it and deletes its log (the error quotes the log). */
    private static RedisServerProcess started(RedisServerProcess r) throws IOException, InterruptedException {
        try {
            r.restart();
            return r;
        } catch (IOException | InterruptedException | RuntimeException e) {
            r.close();
            throw e;
        }
    }

    /** The installed server's version, from {@code redis-server --version}'s first words, or "unknown". */
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

    /** A loopback port that was free a moment ago. */
    public static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    public int port() {
        return port;
    }

    public String url() {
        return "redis://127.0.0.1:" + port;
    }

    /** (Re)starts the server on the same port. */
    public synchronized void restart() throws IOException, InterruptedException {
        if (process != null && process.isAlive()) {
            throw new IllegalStateException("redis-server on port " + port + " is running");
        }
        String exe = executable("redis-server").orElseThrow(() -> new IllegalStateException("redis-server is not "
                + "installed: the Redis tests and bench redis need a real Redis. Install it (apt-get install -y "
                + "redis-server), or run ./lmcache4j test as root, which installs it."));
        List<String> command = new ArrayList<>(List.of(exe));
        if (configFile != null) {
            command.add(configFile.toString());
        }
        command.addAll(List.of("--port", Integer.toString(port), "--bind", "127.0.0.1",
                "--save", "", "--appendonly", "no", "--protected-mode", "no",
                // DEBUG SLEEP makes a slow server for the timeout tests; loopback clients only.
                "--enable-debug-command", "local"));
        command.addAll(extraArgs);
        process = new ProcessBuilder(command)
                .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile())).start();
        long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        while (System.nanoTime() < deadline) {
            if (!process.isAlive()) {
                throw new IllegalStateException("redis-server exited with " + process.exitValue() + " on port " + port
                        + ":\n" + Files.readString(log));
            }
            if (pings()) {
                return;
            }
            Thread.sleep(20);
        }
        stop();
        throw new IllegalStateException("redis-server on port " + port + " did not answer PING within 20 s:\n"
                + Files.readString(log));
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

    /** Kills the server (SIGKILL) and waits for it to exit. */
    public synchronized void kill() throws InterruptedException {
        if (process != null) {
            process.destroyForcibly();
            process.waitFor(10, TimeUnit.SECONDS);
        }
    }

    /** Pauses the server (SIGSTOP): connections stay open, nothing is answered. */
    public synchronized void suspend() throws IOException, InterruptedException {
        signal("-STOP");
    }

    /** Resumes a paused server (SIGCONT). */
    public synchronized void resume() throws IOException, InterruptedException {
        signal("-CONT");
    }

    private void signal(String sig) throws IOException, InterruptedException {
        Process k = new ProcessBuilder("kill", sig, Long.toString(process.pid())).inheritIO().start();
        if (k.waitFor() != 0) {
            throw new IllegalStateException("kill " + sig + " " + process.pid() + " failed");
        }
    }

    /** Stops the server and waits for it to exit. */
    public synchronized void stop() throws InterruptedException {
        if (process != null) {
            process.destroy();
            if (!process.waitFor(10, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                process.waitFor(10, TimeUnit.SECONDS);
            }
        }
    }

    @Override
    public void close() {
        try {
            stop();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        try {
            Files.deleteIfExists(log);
        } catch (IOException ignored) {
            // a temp file
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
}
