package lmcache4j.tests;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

/** The root launcher's help and JDK discovery (the parts that need no build). */
class LauncherTest {
    private static final Path LAUNCHER = Path.of("..", "lmcache4j").toAbsolutePath().normalize();

    @Test
    void helpNamesTheTwoCommandsForAFreshMachine() throws Exception {
        Result r = run(Map.of(), "--help");
        assertEquals(0, r.exit(), r.output());
        assertTrue(r.output().contains("demo") && r.output().contains("test"), r.output());
        Result demoHelp = run(Map.of(), "help", "demo");
        assertTrue(demoHelp.output().startsWith("usage: ./lmcache4j demo"), demoHelp.output());
        Result testHelp = run(Map.of(), "test", "--help");
        assertTrue(testHelp.output().startsWith("usage: ./lmcache4j test"), testHelp.output());
    }

    @Test
    void anUnknownCommandFailsAndSaysSo() throws Exception {
        Result r = run(Map.of(), "frobnicate");
        assertEquals(2, r.exit(), "a bad argument, as every command's: " + r.output());
        assertEquals("lmcache4j: unknown command 'frobnicate'; ./lmcache4j --help lists the commands", r.output().strip());
    }

    @Test
    void aTooOldJavaHomeIsPassedOverForAJdk25() throws Exception {
        Result r = run(Map.of("JAVA_HOME", "/usr/lib/jvm/java-17-openjdk-amd64"), "java");
        assertEquals(0, r.exit(), r.output());
        Path jdk = Path.of(r.output().strip());
        assertTrue(Files.isExecutable(jdk.resolve("bin/javac")), r.output());
        assertEquals(Runtime.version().feature() >= 25, true);
    }

    private record Result(int exit, String output) {
    }

    private static Result run(Map<String, String> env, String... args) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(List.of("bash", LAUNCHER.toString()));
        cmd.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
        pb.environment().putAll(env);
        Process p = pb.start();
        if (!p.waitFor(60, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError("launcher did not finish: " + cmd);
        }
        return new Result(p.exitValue(), new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8));
    }
}
