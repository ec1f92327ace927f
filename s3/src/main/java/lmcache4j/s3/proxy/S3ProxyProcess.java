package lmcache4j.s3.proxy;

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
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * A real S3 API server on a loopback port: s3proxy ({@code org.gaul:s3proxy}, Apache-2.0) over a local
 * directory, run as a process of its own from the jars the {@code s3proxy-server} module copies (never
 * on lmcache4j's module path). Requests must be signed (AWS signature v2 or v4) with
 * {@link #ACCESS_KEY_ID} / {@link #SECRET_ACCESS_KEY}. Buckets are the directories under
 * {@link #dataDirectory()}. Closing it stops the process and deletes a directory it made itself.
 * For the S3 tier's tests, {@code bench s3} and {@code ./lmcache4j s3-server}.
 */
public final class S3ProxyProcess implements AutoCloseable {
    /** The access key id the server accepts (a local test identity, not a secret). */
    public static final String ACCESS_KEY_ID = "lmcache4j-local";
    /** The secret key the server accepts. */
    public static final String SECRET_ACCESS_KEY = "lmcache4j-local-secret";
    /** Where to find s3proxy's jars when {@code -Dlmcache4j.s3proxy.lib} is not set: under the checkout. */
    public static final String LIB_PROPERTY = "lmcache4j.s3proxy.lib";
    private static final Duration START_TIMEOUT = Duration.ofSeconds(120);

    private final int port;
    private final Path dir;
    private final boolean ownsDir;
    private final Path log;
    private Process process;

    private S3ProxyProcess(int port, Path dir, boolean ownsDir) throws IOException {
        this.port = port;
        this.dir = dir;
        this.ownsDir = ownsDir;
        Files.createDirectories(dir.resolve("data"));
        this.log = dir.resolve("s3proxy.log");
    }

    /** Starts a server over a new temporary directory with {@code buckets}, on a free loopback port. */
    public static S3ProxyProcess start(String... buckets) throws IOException, InterruptedException {
        return startOnPort(0, buckets);
    }

    /** As {@link #start(String...)}, on {@code port} (0: a free one); the directory goes with {@link #close()}. */
    public static S3ProxyProcess startOnPort(int port, String... buckets) throws IOException, InterruptedException {
        return start(Files.createTempDirectory("lmcache4j-s3proxy-"), true, port, buckets);
    }

    /**
     * Starts a server over {@code dir} (kept on close) on {@code port} (0: a free one), creating {@code buckets}.
     *
     * @throws IllegalStateException when s3proxy's jars are missing or it does not come up (its log is quoted)
     */
    public static S3ProxyProcess start(Path dir, int port, String... buckets) throws IOException, InterruptedException {
        return start(dir, false, port, buckets);
    }

    private static S3ProxyProcess start(Path dir, boolean ownsDir, int port, String... buckets)
            throws IOException, InterruptedException {
        S3ProxyProcess s = new S3ProxyProcess(port == 0 ? freePort() : port, dir, ownsDir);
        try {
            for (String b : buckets) {
                s.createBucket(b);
            }
            s.restart();
            return s;
        } catch (IOException | InterruptedException | RuntimeException e) {
            s.close();
            throw e;
        }
    }

    /** The directory holding s3proxy's jars: {@code -Dlmcache4j.s3proxy.lib}, else {@code s3proxy-server/target/lib} above the working directory. */
    public static Path libDirectory() {
        String configured = System.getProperty(LIB_PROPERTY);
        if (configured != null && !configured.isBlank()) {
            return Path.of(configured);
        }
        for (Path p = Path.of("").toAbsolutePath(); p != null; p = p.getParent()) {
            Path lib = p.resolve("s3proxy-server/target/lib");
            if (Files.isDirectory(lib)) {
                return lib;
            }
        }
        return Path.of("s3proxy-server/target/lib").toAbsolutePath();
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

    /** The directory whose subdirectories are the buckets. */
    public Path dataDirectory() {
        return dir.resolve("data");
    }

    /** Creates {@code bucket} (a directory; s3proxy lists it at once, running or not). */
    public void createBucket(String bucket) throws IOException {
        Files.createDirectories(dataDirectory().resolve(bucket));
    }

    /** The {@code remote_url} of {@code bucket} on this server: path style, plain HTTP. */
    public String url(String bucket) {
        return "s3://127.0.0.1:" + port + "/" + bucket + "?disable_tls=true";
    }

    /** The {@code extra_config} entries that sign requests for this server. */
    public static Map<String, Object> credentials() {
        return Map.of("aws_access_key_id", ACCESS_KEY_ID, "aws_secret_access_key", SECRET_ACCESS_KEY);
    }

    /** Whether the process is running. */
    public synchronized boolean running() {
        return process != null && process.isAlive();
    }

    /** (Re)starts the server on the same port and directory, and waits until it answers HTTP. */
    public synchronized void restart() throws IOException, InterruptedException {
        if (running()) {
            throw new IllegalStateException("s3proxy on port " + port + " is running");
        }
        Path lib = libDirectory();
        if (!Files.isRegularFile(lib.resolve("s3proxy-" + version(lib) + ".jar"))) {
            throw new IllegalStateException("s3proxy's jars are not in " + lib + ": build the s3proxy-server module "
                    + "(./lmcache4j build) or point -D" + LIB_PROPERTY + " at them");
        }
        Path properties = Files.writeString(dir.resolve("s3proxy.properties"), String.join("\n",
                "s3proxy.endpoint=http://127.0.0.1:" + port,
                "s3proxy.authorization=aws-v2-or-v4",
                "s3proxy.identity=" + ACCESS_KEY_ID,
                "s3proxy.credential=" + SECRET_ACCESS_KEY,
                "jclouds.provider=filesystem",
                "jclouds.filesystem.basedir=" + dataDirectory().toAbsolutePath(), ""));
        // s3proxy ships no logging configuration: logback's default logs every request at DEBUG.
        Path logback = Files.writeString(dir.resolve("logback.xml"), """
                <configuration>
                  <appender name="out" class="ch.qos.logback.core.ConsoleAppender">
                    <encoder><pattern>%d %level %logger{20} %msg%n</pattern></encoder>
                  </appender>
                  <root level="WARN"><appender-ref ref="out"/></root>
                </configuration>
                """);
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx1g", "-Dlogback.configurationFile=" + logback.toAbsolutePath(),
                "--sun-misc-unsafe-memory-access=allow", "--enable-native-access=ALL-UNNAMED",
                "-cp", lib.toAbsolutePath() + "/*", "org.gaul.s3proxy.Main", "--properties", properties.toAbsolutePath().toString()));
        process = new ProcessBuilder(command).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile())).start();
        long deadline = System.nanoTime() + START_TIMEOUT.toNanos();
        while (System.nanoTime() < deadline) {
            if (!process.isAlive()) {
                throw new IllegalStateException("s3proxy exited with " + process.exitValue() + " on port " + port + ":\n" + tail());
            }
            if (answers()) {
                return;
            }
            Thread.sleep(50);
        }
        stop();
        throw new IllegalStateException("s3proxy on port " + port + " did not answer within " + START_TIMEOUT.toSeconds()
                + " s:\n" + tail());
    }

    /** The s3proxy version whose jar is in {@code lib}. */
    private static String version(Path lib) throws IOException {
        if (!Files.isDirectory(lib)) {
            return "missing";
        }
        try (Stream<Path> jars = Files.list(lib)) {
            return jars.map(p -> p.getFileName().toString()).filter(n -> n.matches("s3proxy-[0-9].*\\.jar"))
                    .map(n -> n.substring("s3proxy-".length(), n.length() - ".jar".length())).findFirst().orElse("missing");
        }
    }

    private boolean answers() {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 500);
            s.setSoTimeout(2000);
            OutputStream out = s.getOutputStream();
            out.write("GET / HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
            out.flush();
            InputStream in = s.getInputStream();
            byte[] head = in.readNBytes(7);
            return new String(head, StandardCharsets.US_ASCII).equals("HTTP/1.");
        } catch (IOException e) {
            return false;
        }
    }

    private String tail() {
        try {
            List<String> lines = Files.readAllLines(log);
            return String.join("\n", lines.subList(Math.max(0, lines.size() - 30), lines.size()));
        } catch (IOException e) {
            return "(no log: " + e.getMessage() + ")";
        }
    }

    /** The server's log so far (for a test's failure message). */
    public Optional<String> logText() {
        try {
            return Optional.of(Files.readString(log));
        } catch (IOException e) {
            return Optional.empty();
        }
    }

    /** Stops the process (the directory stays); {@link #restart()} brings it back. */
    public synchronized void stop() throws InterruptedException {
        if (process != null) {
            process.destroy();
            if (!process.waitFor(10, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                process.waitFor(10, TimeUnit.SECONDS);
            }
            process = null;
        }
    }

    /** Waits until the process ends by itself (the foreground {@code s3-server} command). */
    public int waitFor() throws InterruptedException {
        Process p;
        synchronized (this) {
            p = process;
        }
        return p == null ? 0 : p.waitFor();
    }

    @Override
    public void close() {
        try {
            stop();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (ownsDir) {
            try (Stream<Path> paths = Files.walk(dir)) {
                paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            } catch (IOException e) {
                // a temporary directory left behind is only disk space
            }
        }
    }
}
