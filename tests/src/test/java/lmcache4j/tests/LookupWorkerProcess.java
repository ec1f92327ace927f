package lmcache4j.tests;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import lmcache4j.engine.json.Json;

/**
 * A {@link LookupWorkerMain} in a child JVM (this test run's module path, the test classes patched
 * in): commands to its stdin, one JSON answer a line from its stdout, every wait bounded and
 * failing with the child's stderr. {@link #close} ends its input and waits for its exit status.
 */
final class LookupWorkerProcess implements AutoCloseable {
    private final Process process;
    private final Path stderr;
    private final OutputStream stdin;
    private final BlockingQueue<String> lines = new LinkedBlockingQueue<>();

    LookupWorkerProcess(Path dir, String... args) throws Exception {
        this.stderr = dir.resolve("worker.stderr");
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx512m"));
        Path testClasses = Path.of(LookupWorkerMain.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        String modulePath = System.getProperty("jdk.module.path");
        if (modulePath != null && !modulePath.isEmpty()) {
            cmd.addAll(List.of("--enable-native-access=lmcache4j.cuda", "-p", modulePath,
                    "--patch-module", "lmcache4j.tests=" + testClasses, "-m", "lmcache4j.tests/" + LookupWorkerMain.class.getName()));
        } else {
            cmd.addAll(List.of("--enable-native-access=ALL-UNNAMED", "-cp",
                    testClasses + File.pathSeparator + System.getProperty("java.class.path"), LookupWorkerMain.class.getName()));
        }
        cmd.addAll(List.of(args));
        this.process = new ProcessBuilder(cmd).redirectError(stderr.toFile()).start();
        this.stdin = process.getOutputStream();
        Thread.ofVirtual().start(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                for (String l; (l = r.readLine()) != null; ) {
                    lines.add(l);
                }
            } catch (IOException ignored) {
                // the process ended
            }
        });
    }

    /** The next JSON line the worker prints, which must be {@code event}. */
    Map<String, Object> await(String event) throws Exception {
        String line = lines.poll(60, TimeUnit.SECONDS);
        if (line == null) {
            throw new AssertionError("the worker printed nothing within 60 s (waiting for '" + event + "')\n" + stderr());
        }
        Map<String, Object> parsed = Json.parseObject(line);
        if (!event.equals(parsed.get("event"))) {
            throw new AssertionError("expected event '" + event + "', got " + line + "\n" + stderr());
        }
        return parsed;
    }

    /** Sends a command and returns its answer, which must be {@code event}. */
    Map<String, Object> ask(String command, String event) throws Exception {
        stdin.write((command + "\n").getBytes(StandardCharsets.UTF_8));
        stdin.flush();
        return await(event);
    }

    String stderr() throws IOException {
        return Files.exists(stderr) ? Files.readString(stderr) : "";
    }

    /** Ends the worker's input: it closes its engine (leak check) and exits; its exit status. */
    int finish() throws Exception {
        stdin.close();
        if (!process.waitFor(60, TimeUnit.SECONDS)) {
            throw new AssertionError("the worker did not exit\n" + stderr());
        }
        return process.exitValue();
    }

    @Override
    public void close() throws InterruptedException {
        try {
            stdin.close();
        } catch (IOException ignored) {
            // gone already
        }
        if (!process.waitFor(10, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            process.waitFor(10, TimeUnit.SECONDS);
        }
    }
}
