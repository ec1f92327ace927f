package lmcache4j.tests.controller;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

import lmcache4j.engine.json.Json;
import lmcache4j.engine.json.JsonException;

/**
 * A process a test starts and always stops: its stdout read line by line on a thread of its own
 * (JSON objects, one a line, become events), its stderr in a log file, a stdin for commands. Every
 * wait is bounded and, when it runs out, fails with the process's output, so a test that hangs
 * says where. {@link #close} ends it politely (stdin closed, then SIGTERM, then SIGKILL).
 */
final class ChildProcess implements AutoCloseable {
    private final String name;
    private final Process process;
    private final Path stderr;
    private final OutputStream stdin;
    private final List<String> lines = new ArrayList<>();
    private final Thread reader;

    private ChildProcess(String name, Process process, Path stderr) {
        this.name = name;
        this.process = process;
        this.stderr = stderr;
        this.stdin = process.getOutputStream();
        this.reader = Thread.ofVirtual().name(name + "-stdout").start(this::readStdout);
    }

    /** Starts {@code command}; its stderr goes to {@code logDir/<name>.stderr}. */
    static ChildProcess start(String name, List<String> command, Path logDir, Map<String, String> env) throws IOException {
        Path stderr = logDir.resolve(name + ".stderr");
        ProcessBuilder pb = new ProcessBuilder(command).redirectError(stderr.toFile());
        pb.environment().put("PYTHONDONTWRITEBYTECODE", "1");
        pb.environment().putAll(env);
        return new ChildProcess(name, pb.start(), stderr);
    }

    private void readStdout() {
        try (BufferedReader r = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
            for (String line; (line = r.readLine()) != null; ) {
                synchronized (lines) {
                    lines.add(line);
                    lines.notifyAll();
                }
            }
        } catch (IOException e) {
            // the process went away: what it printed stays in lines
        } finally {
            synchronized (lines) {
                lines.notifyAll();
            }
        }
    }

    long pid() {
        return process.pid();
    }

    boolean isAlive() {
        return process.isAlive();
    }

    /** Writes one line to the process's stdin. */
    void send(String line) throws IOException {
        stdin.write((line + "\n").getBytes(StandardCharsets.UTF_8));
        stdin.flush();
    }

    /** The stdout lines so far. */
    List<String> lines() {
        synchronized (lines) {
            return List.copyOf(lines);
        }
    }

    /** The stdout lines that are JSON objects, parsed, in order. */
    List<Map<String, Object>> events() {
        List<Map<String, Object>> out = new ArrayList<>();
        for (String l : lines()) {
            parse(l).ifPresent(out::add);
        }
        return out;
    }

    /**
     * Waits for the {@code nth} (1-based) JSON event with {@code "event": name} that also satisfies
     * {@code filter}, counting from the start of the output; fails after {@code within}.
     */
    Map<String, Object> awaitEvent(String event, int nth, Predicate<Map<String, Object>> filter, Duration within)
            throws InterruptedException {
        long deadline = System.nanoTime() + within.toNanos();
        synchronized (lines) {
            while (true) {
                int seen = 0;
                for (String l : lines) {
                    Optional<Map<String, Object>> e = parse(l);
                    if (e.isPresent() && event.equals(e.get().get("event")) && filter.test(e.get()) && ++seen == nth) {
                        return e.get();
                    }
                }
                long left = deadline - System.nanoTime();
                if (left <= 0 || (!process.isAlive() && !reader.isAlive())) {
                    throw new AssertionError(name + ": no event '" + event + "' #" + nth + " within " + within
                            + (process.isAlive() ? "" : " (the process exited)") + "\n" + output());
                }
                TimeUnit.NANOSECONDS.timedWait(lines, left);
            }
        }
    }

    Map<String, Object> awaitEvent(String event, Duration within) throws InterruptedException {
        return awaitEvent(event, 1, e -> true, within);
    }

    /** Waits for the process to exit on its own; its exit status. */
    int awaitExit(Duration within) throws InterruptedException {
        if (!process.waitFor(within.toMillis(), TimeUnit.MILLISECONDS)) {
            throw new AssertionError(name + " did not exit within " + within + "\n" + output());
        }
        reader.join(Duration.ofSeconds(5));
        return process.exitValue();
    }

    /** SIGTERM, as an operator's {@code kill} or a service manager stops a process; its exit status. */
    int sigterm(Duration within) throws InterruptedException {
        process.toHandle().destroy(); // Process.destroy() would also close the pipe of what it prints while stopping
        return awaitExit(within);
    }

    /** SIGKILL: no shutdown hook, no deregistration, sockets dropped by the kernel. */
    void kill9() throws InterruptedException {
        process.destroyForcibly();
        process.waitFor(10, TimeUnit.SECONDS);
    }

    /** What the process printed, for failure messages: stdout, then the tail of stderr. */
    String output() {
        String err;
        try {
            err = Files.exists(stderr) ? Files.readString(stderr) : "";
        } catch (IOException e) {
            err = "(stderr unreadable: " + e + ")";
        }
        if (err.length() > 8000) {
            err = "..." + err.substring(err.length() - 8000);
        }
        return "--- " + name + " stdout ---\n" + String.join("\n", lines()) + "\n--- " + name + " stderr ---\n" + err;
    }

    @Override
    public void close() throws InterruptedException {
        try {
            stdin.close();
        } catch (IOException ignored) {
            // already gone
        }
        if (!process.waitFor(5, TimeUnit.SECONDS)) {
            process.destroy();
            if (!process.waitFor(5, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                process.waitFor(10, TimeUnit.SECONDS);
            }
        }
        reader.join(Duration.ofSeconds(5));
    }

    private static Optional<Map<String, Object>> parse(String line) {
        if (!line.startsWith("{")) {
            return Optional.empty();
        }
        try {
            return Optional.of(Json.parseObject(line));
        } catch (JsonException e) {
            return Optional.empty();
        }
    }
}
