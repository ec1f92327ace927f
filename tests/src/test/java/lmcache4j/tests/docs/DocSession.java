package lmcache4j.tests.docs;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

/**
 * A reader following one page in a terminal: its {@code run} blocks are pasted, one after the
 * other, into one bash (variables and background jobs carry over, as in a terminal), started in the
 * repository's root with {@code set -e -o pipefail}, so any command that fails fails the block; a
 * {@code serves} block runs as in a second terminal until Ctrl-C. Every wait is bounded and a
 * failure carries the output. {@link #close} ends whatever is left: the shell, its background
 * jobs and the server.
 */
final class DocSession implements AutoCloseable {
    private final Path root;
    private final Map<String, String> env;
    private final String token = "__docs_block_end_" + UUID.randomUUID().toString().replace("-", "");
    private Output shell;
    private Process shellProcess;
    private String umask;
    private Process server;
    private Output serverOutput;
    private ShellBlock serverBlock;

    DocSession(Path root, Map<String, String> env) {
        this.root = root;
        this.env = env;
    }

    /** A process's stdout and stderr, line by line, read on a thread of its own. */
    private static final class Output {
        private final List<String> lines = new ArrayList<>();
        private boolean ended;

        Output(InputStream in, String name) {
            Thread.ofVirtual().name(name).start(() -> {
                try (BufferedReader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
                    for (String line; (line = r.readLine()) != null; ) {
                        synchronized (this) {
                            lines.add(line);
                            notifyAll();
                        }
                    }
                } catch (IOException e) {
                    // the process went away: what it printed stays
                } finally {
                    synchronized (this) {
                        ended = true;
                        notifyAll();
                    }
                }
            });
        }

        synchronized int size() {
            return lines.size();
        }

        synchronized String since(int from) {
            return String.join("\n", lines.subList(Math.min(from, lines.size()), lines.size()));
        }

        /**
         * The index of the first line from {@code from} on that contains {@code text}, waiting until
         * the deadline; -1 if none came. Once {@code process} is gone, only what it had printed is read.
         */
        synchronized int await(int from, String text, long deadlineNanos, Process process) throws InterruptedException {
            long goneSince = -1;
            while (true) {
                for (int i = from; i < lines.size(); i++) {
                    if (lines.get(i).contains(text)) {
                        return i;
                    }
                }
                long now = System.nanoTime();
                if (!process.isAlive() && goneSince < 0) {
                    goneSince = now; // its last lines may still be on their way to the reader
                }
                boolean drained = ended || goneSince >= 0 && now - goneSince > TimeUnit.SECONDS.toNanos(2);
                if (now >= deadlineNanos || drained) {
                    return -1;
                }
                wait(Math.max(1, Math.min(100, TimeUnit.NANOSECONDS.toMillis(deadlineNanos - now))));
            }
        }

        synchronized String line(int i) {
            return lines.get(i);
        }
    }

    private ProcessBuilder bash(List<String> args) {
        // A shell in a terminal takes Ctrl-C; a test run started in the background of a script inherits SIGINT
        // ignored, and so would every command it starts (never stopping on Ctrl-C): env restores the default.
        List<String> command = new ArrayList<>(List.of("env", "--default-signal=INT", "bash", "--noprofile", "--norc"));
        command.addAll(args);
        ProcessBuilder pb = new ProcessBuilder(command).directory(root.toFile()).redirectErrorStream(true);
        pb.environment().clear();
        pb.environment().putAll(env);
        return pb;
    }

    /** Pastes {@code block} into the page's shell; returns what it printed, or fails saying why. */
    String run(ShellBlock block, Duration timeout) throws IOException, InterruptedException {
        if (shellProcess == null) {
            shellProcess = bash(List.of("-s")).start();
            shell = new Output(shellProcess.getInputStream(), "docs-shell");
            write("set -e -o pipefail\n" + "echo \"" + token + " 0 $(umask)\"\n");
            umask = awaitEnd(0, Duration.ofSeconds(30), block).split(" ")[2];
        }
        int from = shell.size();
        // stdin from /dev/null: the shell reads its script from its own stdin, which a command must not eat.
        write("{\n" + block.code() + "} < /dev/null\n" + "echo \"" + token + " $? $(umask)\"\n");
        String[] end = awaitEnd(from, timeout, block).split(" ");
        String output = outputBefore(from);
        if (!end[2].equals(umask)) {
            throw new AssertionError(block.where() + " left the shell with umask " + end[2] + " instead of " + umask
                    + ": run what sets it in a subshell, ( ... )\n" + output);
        }
        return output;
    }

    private void write(String text) throws IOException {
        OutputStream in = shellProcess.getOutputStream();
        in.write(text.getBytes(StandardCharsets.UTF_8));
        in.flush();
    }

    /** The sentinel line after {@code from}; fails with the output when the shell exits (a command failed) or time runs out. */
    private String awaitEnd(int from, Duration timeout, ShellBlock block) throws InterruptedException {
        int at = shell.await(from, token, System.nanoTime() + timeout.toNanos(), shellProcess);
        if (at < 0) {
            String output = shell.since(from);
            if (shellProcess.waitFor(5, TimeUnit.SECONDS)) {
                throw new AssertionError(block.where() + " failed: a command exited " + shellProcess.exitValue()
                        + " (as pasted, from the repository's root)\n" + output);
            }
            throw new AssertionError(block.where() + " did not finish within " + timeout.toSeconds() + " s\n" + output);
        }
        return shell.line(at).substring(shell.line(at).indexOf(token));
    }

    private String outputBefore(int from) {
        String all = shell.since(from);
        int end = all.lastIndexOf(token);
        return end < 0 ? all : all.substring(0, end);
    }

    /** Starts {@code block}, a command that serves, as in a second terminal; returns once it printed its ready text. */
    void serve(ShellBlock block, Duration timeout) throws IOException, InterruptedException {
        stopServer();
        server = bash(List.of("-c", block.code().strip())).redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")))
                .start();
        serverOutput = new Output(server.getInputStream(), "docs-server");
        serverBlock = block;
        if (serverOutput.await(0, block.marker().orElseThrow().text(), System.nanoTime() + timeout.toNanos(), server) < 0) {
            String output = serverOutput.since(0);
            boolean exited = server.waitFor(2, TimeUnit.SECONDS);
            throw new AssertionError(block.where() + " never printed '" + block.marker().get().text() + "'"
                    + (exited ? " (it exited " + server.exitValue() + ")" : " within " + timeout.toSeconds() + " s") + "\n" + output);
        }
    }

    boolean serving() {
        return server != null;
    }

    /** Ctrl-C to the command serving; it must exit 0. Returns all it printed; "" when none serves. */
    String stopServer() throws IOException, InterruptedException {
        if (server == null) {
            return "";
        }
        Process s = server;
        server = null;
        signal(s.toHandle(), "-INT");
        boolean exited = s.waitFor(60, TimeUnit.SECONDS);
        String output = serverOutput.since(0);
        if (!exited) {
            kill(s.toHandle());
            throw new AssertionError(serverBlock.where() + " did not stop within 60 s of Ctrl-C\n" + output);
        }
        if (s.exitValue() != 0) {
            throw new AssertionError(serverBlock.where() + " exited " + s.exitValue() + " after Ctrl-C, not 0\n" + output);
        }
        return output;
    }

    /** Ctrl-C goes to the terminal's foreground process group: the command and whatever it started. */
    private static void signal(ProcessHandle process, String signal) throws IOException, InterruptedException {
        List<String> pids = new ArrayList<>();
        process.descendants().forEach(d -> pids.add(Long.toString(d.pid())));
        pids.add(Long.toString(process.pid()));
        List<String> command = new ArrayList<>(List.of("kill", signal));
        command.addAll(pids);
        new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start()
                .waitFor(10, TimeUnit.SECONDS);
    }

    /** SIGTERM to a process and its descendants, then SIGKILL to what is left after 10 s. */
    private static void kill(ProcessHandle process) throws InterruptedException {
        List<ProcessHandle> all = new ArrayList<>(process.descendants().toList());
        all.add(process);
        all.forEach(ProcessHandle::destroy);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        for (ProcessHandle p : all) {
            while (p.isAlive() && System.nanoTime() < deadline) {
                Thread.sleep(20);
            }
            p.destroyForcibly();
        }
    }

    /** Waits until every one of {@code files} (relative to the root) exists, while the shell lives. */
    void awaitFiles(ShellBlock block, List<String> files, Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!files.stream().allMatch(f -> Files.exists(root.resolve(f)))) {
            if (System.nanoTime() > deadline || shellProcess == null || !shellProcess.isAlive()) {
                throw new AssertionError(block.where() + " waits for " + files + ", which the blocks before it did not make within "
                        + timeout.toSeconds() + " s\n" + (shell == null ? "" : shell.since(0)));
            }
            Thread.sleep(100);
        }
    }

    /** Everything the page's shell printed so far (its background jobs' output included). */
    String shellOutput() {
        return shell == null ? "" : shell.since(0);
    }

    @Override
    public void close() throws InterruptedException {
        if (server != null) {
            kill(server.toHandle());
            server = null;
        }
        if (shellProcess != null) {
            kill(shellProcess.toHandle());
            shellProcess = null;
        }
    }
}
