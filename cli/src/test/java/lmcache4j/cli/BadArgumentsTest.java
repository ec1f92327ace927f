package lmcache4j.cli;

import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.function.Executable;

/**
 * Garbage for every option of every command: each case exits with the documented status (2 for
 * bad arguments) and says why in exactly one line on stderr, with no stack trace and no raw
 * control character, and prints nothing on stdout.
 */
@Timeout(300)
class BadArgumentsTest {
    private record Run(int exit, String out, String err) {
    }

    /** A command run in this JVM with captured output. */
    @FunctionalInterface
    private interface Command {
        int run(String[] args, PrintStream out, PrintStream err);
    }

    private static final Map<String, Command> COMMANDS = Map.of(
            "demo", DemoCommand::run,
            "server", ServerCommand::run,
            "keys", (args, out, err) -> KeysCommand.run(args, new ByteArrayInputStream("1 2 3".getBytes(StandardCharsets.UTF_8)),
                    out, err, Map.of("PYTHONHASHSEED", "0")),
            "config", (args, out, err) -> ConfigCommand.run(List.of(args), Map.of(), out, err),
            "bench", BenchCommand::run,
            "report", MachineReportCommand::run,
            "cuda-check", CudaCheckCommand::run);

    private static Run run(String line) {
        List<String> words = new ArrayList<>(Arrays.asList(line.split(" ", -1)));
        Command command = COMMANDS.get(words.removeFirst());
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int exit = command.run(words.toArray(String[]::new), new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Run(exit, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    /** Small demo settings, so that a case that gets as far as the engine starts it quickly. */
    private static final String SMALL = " --requests 1 --layers 1 --cpu-gb 0.05 --no-disk --quiet";

    private static final List<String> USAGE_ERRORS = List.of(
            "demo --remote lm://nonsense" + SMALL,
            "demo --remote lm://127.0.0.1" + SMALL,
            "demo --remote ftp://x" + SMALL,
            "demo --remote redis://host:99999" + SMALL,
            "demo --remote " + SMALL,
            "demo --remote=://" + SMALL,
            "demo --remote lm://[::1" + SMALL,
            "demo --remote fs://" + SMALL,
            "demo --remote redis://127.0.0.1:6379?bogus=1" + SMALL,
            "demo --cpu-gb 100000",
            "demo --cpu-gb -1",
            "demo --cpu-gb NaN",
            "demo --cpu-gb abc",
            "demo --cpu-gb Infinity",
            "demo --cpu-gb 1e308",
            "demo --cpu-gb 0.001",
            "demo --requests abc",
            "demo --requests -5",
            "demo --requests 99999999999",
            "demo --layers 0",
            "demo --seed x",
            "demo --disk",
            "demo --disk /proc/lmcache4j-cannot-exist" + SMALL.replace(" --no-disk", ""),
            "demo --disk-gb -3",
            "demo --disk-gb 1e300",
            "demo --disk-gb 0.001",
            "demo --json=yes",
            "demo --kv-events nonsense",
            "demo --kv-events",
            "demo --no-disk --disk /tmp",
            "demo --prompt-out /proc/lmcache4j-cannot-exist/prompt.json" + SMALL,
            "demo --prompt-out /tmp" + SMALL,
            "demo extra",
            "demo --\u001b[2J",
            "server --max-size 1e-12",
            "server --max-size 0",
            "server --max-size -1",
            "server --max-size NaN",
            "server --max-size abc",
            "server --max-size 1e300",
            "server --max-size 100000",
            "server --port -1",
            "server --port 99999",
            "server --port abc",
            "server --host 999.999.999.999",
            "server --host",
            "server --max-frame-mb abc",
            "server --max-frame-mb 99999",
            "server --token",
            "server --token=",
            "server --bogus",
            "server --max-connections 0",
            "server --max-entries -3",
            "server --max-entries many",
            "server --idle-timeout -1",
            "server --idle-timeout 1e99",
            "server --stall-timeout x",
            "server --stall-timeout NaN",
            "keys --model",
            "keys --model m --chunk-size abc",
            "keys --model m --world-size 0",
            "keys --model m --worker-id -1",
            "keys --model m --dtype fp4",
            "keys --bogus",
            "config --file /lmcache4j-nonexistent.yaml",
            "config --file /proc",
            "config --set",
            "config --set x",
            "config --set chunk_size=abc",
            "config --set max_local_cpu_size=-1",
            "config --set extra_config=" + "[".repeat(10_000),
            "config --bogus",
            "bench",
            "bench nope",
            "bench jmh",
            "bench allocator --runs abc",
            "bench allocator --runs 0",
            "bench allocator --pool-mib 1",
            "bench allocator --only nope",
            "bench allocator --bogus",
            "bench hash --tokens abc",
            "bench hash --chunk-size 0",
            "bench hash --bogus",
            "bench store --chunks abc",
            "bench store --chunks 0",
            "bench store --runs",
            "bench disk --threads 0",
            "bench disk --dir",
            "bench disk --dir /proc/lmcache4j-cannot-exist",
            "bench redis --chunks abc",
            "bench redis --tokens 0",
            "bench redis --bogus",
            "report extra",
            "cuda-check --tokens 300",
            "cuda-check --tokens abc",
            "cuda-check --tokens 0",
            "cuda-check --runs 0",
            "cuda-check --json=1",
            "cuda-check extra");

    @Test
    void everyBadArgumentIsOneLineOnStderrAndExitTwo() {
        List<Executable> checks = new ArrayList<>();
        for (String line : USAGE_ERRORS) {
            Run r = run(line);
            checks.add(() -> OneLineFailure.assertThat(line, r.exit(), r.out(), r.err(), 2));
        }
        assertAll(checks);
    }

    @Test
    void theMessagesSayWhatWasWrongAndWhatTheMachineHas() {
        assertTrue(run("demo --remote lm://127.0.0.1" + SMALL).err().startsWith(
                "lmcache4j demo: --remote: lm:// URL without a valid port: lm://127.0.0.1 (expected lm://host:port)"));
        assertTrue(run("demo --remote ftp://x" + SMALL).err().contains("scheme 'ftp://' is not served"));
        String memory = run("demo --cpu-gb 100000").err();
        assertTrue(memory.contains("--cpu-gb 100000 asks for 97.7 TiB of host memory for the CPU tier, but this machine has ")
                && memory.contains(" of memory, ") && memory.contains(" available"), memory);
        assertTrue(run("server --max-size 1e-12").err().contains("--max-size 1e-12 GB is less than 1 MiB"));
        assertTrue(run("server --max-size 100000").err().contains("more than this machine's"));
        assertTrue(run("demo --\u001b[2J").err().contains("unknown option '--\\x1b[2J'"));
        // Said when parsed, not after the whole run that writes the file at its end.
        assertTrue(run("demo --prompt-out /proc/lmcache4j-cannot-exist/prompt.json" + SMALL).err().startsWith("lmcache4j demo: "
                + "--prompt-out /proc/lmcache4j-cannot-exist/prompt.json: the directory /proc/lmcache4j-cannot-exist does not exist"));
    }

    /** Every command words it alike (the MP and lm:// servers said "unknown argument", config "unexpected argument"). */
    @Test
    void everyCommandCallsAnUnknownDashedArgumentAnUnknownOption() {
        Map<String, Command> all = new java.util.TreeMap<>(COMMANDS);
        all.put("mp-server", MpServerCommand::run);
        all.put("controller", ControllerCommand::run);
        all.put("pd-worker", (args, out, err) -> PdWorkerCommand.run(List.of(args), Map.of(), out, err, null));
        all.put("pd-proxy", (args, out, err) -> PdProxyCommand.run(args, out, err, null));
        List<Executable> checks = new ArrayList<>();
        for (String name : all.keySet()) {
            String line = name + (name.equals("bench") ? " hash" : "") + " --bogus";
            List<String> words = List.of(line.split(" "));
            ByteArrayOutputStream err = new ByteArrayOutputStream();
            int exit = all.get(name).run(words.subList(1, words.size()).toArray(String[]::new),
                    new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8),
                    new PrintStream(err, true, StandardCharsets.UTF_8));
            String expected = "lmcache4j " + String.join(" ", words.subList(0, words.size() - 1)) + ": unknown option '--bogus' (./lmcache4j "
                    + String.join(" ", words.subList(0, words.size() - 1)) + " --help lists the options)";
            checks.add(() -> assertEquals(2, exit, line));
            checks.add(() -> assertEquals(expected, err.toString(StandardCharsets.UTF_8).strip(), line));
        }
        assertAll(checks);
    }

    @Test
    void aFailureThatEscapesACommandIsOneLineWithExitOne() {
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        PrintStream stream = new PrintStream(err, true, StandardCharsets.UTF_8);
        int exit = CliMain.run("demo", () -> {
            throw new IllegalStateException("the engine broke", new StackOverflowError());
        }, stream, false);
        Run r = new Run(exit, "", err.toString(StandardCharsets.UTF_8));
        OneLineFailure.assertThat("an escaped exception", r.exit(), r.out(), r.err(), 1);
        assertEquals("lmcache4j demo: failed: the engine broke: StackOverflowError (LMCACHE4J_STACK_TRACES=1 prints the stack "
                + "trace)", r.err().strip());
    }
}
