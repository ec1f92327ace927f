package lmcache4j.bench.demo.cluster;

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
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import lmcache4j.engine.json.Json;

/**
 * The demo's handle on one instance process ({@link InstanceMain}), started with this JVM's own
 * {@code java} and module path (or class path). Every wait is bounded; a process that fails, dies
 * or does not answer in time is an {@link InstanceFailedException} carrying the end of its stderr.
 * {@link #close} ends it politely (end of input, then SIGTERM, then SIGKILL) and says how it ended.
 */
final class InstanceProcess implements AutoCloseable {
    private static final String EOF = "\u0000eof";

    private final String name;
    private final Process process;
    private final Path stderr;
    private final OutputStream stdin;
    private final LinkedBlockingQueue<String> lines = new LinkedBlockingQueue<>();
    private InstanceEnding ending;

    private InstanceProcess(String name, Process process, Path stderr) {
        this.name = name;
        this.process = process;
        this.stderr = stderr;
        this.stdin = process.getOutputStream();
        Thread.ofPlatform().daemon().name(name + "-stdout").start(this::readStdout);
    }

    /** Starts the process of {@code spec}; its stderr goes to {@code logDir/<instance>.log}. */
    static InstanceProcess start(InstanceSpec spec, Path logDir) throws IOException {
        Path log = logDir.resolve(spec.instanceId() + ".log");
        ProcessBuilder pb = new ProcessBuilder(javaCommand(InstanceMain.class.getName(), spec.toJson()))
                .redirectError(log.toFile());
        return new InstanceProcess(spec.instanceId(), pb.start(), log);
    }

    /** This JVM's java on its module path (as the launcher runs the CLI) or, without one, its class path. */
    static List<String> javaCommand(String mainClass, String argument) {
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        // Small heaps and one GC thread: N of these share the machine with the demo.
        cmd.addAll(List.of("-Xmx768m", "-XX:+UseSerialGC"));
        String modulePath = System.getProperty("jdk.module.path");
        Module bench = InstanceProcess.class.getModule();
        if (bench.isNamed() && modulePath != null && !modulePath.isEmpty()) {
            cmd.addAll(List.of("--enable-native-access=lmcache4j.cuda", "--module-path", modulePath, "-m",
                    bench.getName() + "/" + mainClass));
        } else {
            cmd.addAll(List.of("--enable-native-access=ALL-UNNAMED", "-cp", System.getProperty("java.class.path"), mainClass));
        }
        cmd.add(argument);
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

    String name() {
        return name;
    }

    /** Waits for the next answer line, which must be event {@code expected}. */
    Map<String, Object> await(String expected, Duration timeout) {
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
            throw failure("its process ended" + (process.isAlive() ? "" : " with status " + process.exitValue())
                    + " (waiting for " + expected + ")");
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

    /** Sends one command line and waits for its answer. */
    Map<String, Object> call(String command, String expected, Duration timeout) {
        try {
            stdin.write((command + "\n").getBytes(StandardCharsets.UTF_8));
            stdin.flush();
        } catch (IOException e) {
            throw failure("cannot be written to: " + e.getMessage());
        }
        return await(expected, timeout);
    }

    /** Fails (as {@link #await} does) when the process has ended while it should be {@code doing} something. */
    void requireAlive(String doing) {
        if (!process.isAlive()) {
            throw failure("its process ended with status " + process.exitValue() + " while " + doing);
        }
    }

    private InstanceFailedException failure(String what) {
        return new InstanceFailedException("instance " + name + ": " + what + "; its log ends: " + logTail());
    }

    /** The last lines of the process's stderr. */
    String logTail() {
        try {
            List<String> all = Files.readAllLines(stderr, StandardCharsets.UTF_8);
            return String.join(" | ", all.subList(Math.max(0, all.size() - 6), all.size()));
        } catch (IOException | RuntimeException e) {
            return "(unreadable: " + e.getMessage() + ")";
        }
    }

    private static Object eventOf(String line) {
        try {
            return Json.parseObject(line).get("event");
        } catch (RuntimeException e) {
            return null;
        }
    }

    /** How the process ended; null while {@link #close} has not run. */
    InstanceEnding ending() {
        return ending;
    }

    /** Ends the process: end of input, at most 60 s for it to close its engine (the leak check), then signals. */
    @Override
    public void close() {
        if (ending != null) {
            return;
        }
        try {
            stdin.close();
        } catch (IOException e) {
            // it is gone already
        }
        ending = InstanceEnding.FAILED;
        try {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (System.nanoTime() < deadline) {
                String line = lines.poll(1, TimeUnit.SECONDS);
                if (line == null) {
                    continue;
                }
                if (line.equals(EOF)) {
                    break;
                }
                Object event = eventOf(line);
                if ("closed".equals(event)) {
                    ending = InstanceEnding.CLOSED;
                } else if ("leak".equals(event)) {
                    ending = InstanceEnding.LEAK;
                }
            }
            if (!process.waitFor(10, TimeUnit.SECONDS)) {
                process.destroy();
                if (!process.waitFor(5, TimeUnit.SECONDS)) {
                    process.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
                }
                ending = InstanceEnding.KILLED;
            } else if (process.exitValue() != 0 && ending == InstanceEnding.CLOSED) {
                ending = InstanceEnding.FAILED;
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            process.destroyForcibly();
            ending = InstanceEnding.KILLED;
        }
    }

    /** An instance process failed, died, or did not answer in time. */
    static final class InstanceFailedException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        InstanceFailedException(String message) {
            super(message);
        }
    }
}
