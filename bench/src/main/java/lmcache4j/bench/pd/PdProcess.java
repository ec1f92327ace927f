package lmcache4j.bench.pd;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import lmcache4j.engine.json.Json;

/**
 * One PD process this JVM started (a role, {@link PdRoleMain}, or the proxy, {@link PdProxyMain}) with
 * this JVM's own {@code java}, module path, class path and the Jlama modules: it answers one JSON
 * object a line on stdout, logs to a file, and ends when its stdin closes. Every wait is bounded; a
 * process that fails, dies or does not answer in time is an {@link IllegalStateException} carrying
 * the end of its log. {@link #kill()} ends it at once (the fault tests' dying process).
 */
public final class PdProcess implements AutoCloseable {
    private static final String EOF = "\u0000eof";

    private final String name;
    private final Process process;
    private final Path log;
    private final LinkedBlockingQueue<String> lines = new LinkedBlockingQueue<>();

    private PdProcess(String name, Process process, Path log) {
        this.name = name;
        this.process = process;
        this.log = log;
        Thread.ofPlatform().daemon().name("lmcache4j-pd-" + name + "-stdout").start(this::readStdout);
    }

    /**
     * Starts {@code mainClass} (of this module) with {@code argument}; its stderr goes to
     * {@code logDir/name.log}. With {@code cpus} (for example {@code "0"}), the process runs under
     * {@code taskset -c cpus}.
     */
    public static PdProcess start(String name, Class<?> mainClass, String argument, Path logDir, Optional<String> cpus)
            throws IOException {
        List<String> cmd = new ArrayList<>();
        cpus.ifPresent(c -> cmd.addAll(List.of("taskset", "-c", c)));
        cmd.addAll(javaCommand(mainClass.getName()));
        cmd.add(argument);
        Path log = logDir.resolve(name + ".log");
        return new PdProcess(name, new ProcessBuilder(cmd).redirectError(log.toFile()).start(), log);
    }

    /** This JVM's java on its module path (with the Jlama modules when this JVM has them) and class path. */
    static List<String> javaCommand(String mainClass) {
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        cmd.addAll(List.of("-Xmx1g", "-XX:+UseParallelGC", "-Dsun.net.httpserver.maxRspTime=600",
                "-Dsun.net.httpserver.maxReqTime=600", "--sun-misc-unsafe-memory-access=allow"));
        String modulePath = System.getProperty("jdk.module.path");
        Module bench = PdProcess.class.getModule();
        String classPath = System.getProperty("java.class.path", "");
        if (bench.isNamed() && modulePath != null && !modulePath.isEmpty()) {
            cmd.addAll(List.of("--enable-native-access=lmcache4j.cuda", "--module-path", modulePath));
            // Every module this JVM's module path holds (lmcache4j.jlama, Jlama and what it reads among them), and the
            // Vector API: the roles load the model whatever way this JVM was started (launcher or test runner).
            cmd.addAll(List.of("--add-modules", "ALL-MODULE-PATH,jdk.incubator.vector"));
            if (!classPath.isEmpty()) {
                cmd.addAll(List.of("-cp", classPath));
            }
            cmd.addAll(List.of("-m", bench.getName() + "/" + mainClass));
        } else {
            cmd.addAll(List.of("--enable-native-access=ALL-UNNAMED", "--add-modules", "jdk.incubator.vector", "-cp",
                    classPath, mainClass));
        }
        return cmd;
    }

    private void readStdout() {
        try (BufferedReader r = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
            for (String line; (line = r.readLine()) != null; ) {
                lines.add(line);
            }
        } catch (IOException e) {
            // the process went away
        } finally {
            lines.add(EOF);
        }
    }

    /** The process's name. */
    public String name() {
        return name;
    }

    /** Waits for the next answer line, which must be event {@code expected}. */
    public Map<String, Object> await(String expected, Duration timeout) {
        String line;
        try {
            line = lines.poll(timeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw failure("interrupted while waiting for " + expected);
        }
        if (line == null) {
            throw failure("no answer within " + timeout.toSeconds() + " s (waiting for " + expected + ")");
        }
        if (line.equals(EOF)) {
            lines.add(EOF);
            throw failure("its process ended (waiting for " + expected + ")");
        }
        Map<String, Object> event;
        try {
            event = Json.parseObject(line);
        } catch (RuntimeException e) {
            throw failure("printed a line that is no answer: " + line.substring(0, Math.min(120, line.length())));
        }
        if (!expected.equals(event.get("event"))) {
            throw failure("answered " + line.substring(0, Math.min(300, line.length())) + " instead of " + expected);
        }
        return event;
    }

    /** Whether the process is running. */
    public boolean isAlive() {
        return process.isAlive();
    }

    private IllegalStateException failure(String what) {
        return new IllegalStateException("PD process " + name + ": " + what + "; its log (" + log + ") ends: " + logTail());
    }

    /** The last lines of its log. */
    public String logTail() {
        try {
            List<String> all = Files.readAllLines(log, StandardCharsets.UTF_8);
            return String.join(" | ", all.subList(Math.max(0, all.size() - 6), all.size()));
        } catch (IOException | RuntimeException e) {
            return "(unreadable: " + e.getMessage() + ")";
        }
    }

    /** Ends the process at once (SIGKILL), as a process that dies does. */
    public void kill() {
        process.destroyForcibly();
        try {
            process.waitFor(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * Ends the process politely: end of input, at most 30 s for it to close (its leak checks), then
     * signals. True when it closed cleanly (its last line was {@code closed}, status 0).
     */
    public boolean stop() {
        try {
            process.getOutputStream().close();
        } catch (IOException e) {
            // gone already
        }
        boolean clean = false;
        try {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (System.nanoTime() < deadline) {
                String line = lines.poll(1, TimeUnit.SECONDS);
                if (line == null) {
                    continue;
                }
                if (line.equals(EOF)) {
                    break;
                }
                clean |= line.contains("\"closed\"");
            }
            if (!process.waitFor(10, TimeUnit.SECONDS)) {
                process.destroy();
                if (!process.waitFor(5, TimeUnit.SECONDS)) {
                    process.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
                }
                return false;
            }
            return clean && process.exitValue() == 0;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            process.destroyForcibly();
            return false;
        }
    }

    @Override
    public void close() {
        if (process.isAlive()) {
            stop();
        }
    }
}
