package lmcache4j.tests;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The root launcher's help and its JDK discovery ({@code find_jdk}, {@code java_major}), the latter
 * against fake JDK directories: the launcher is sourced, which defines its functions without running
 * a command, and its {@code JVM_ROOT} pointed at a temporary directory.
 */
class LauncherTest {
    private static final Path LAUNCHER = Path.of("..", "lmcache4j").toAbsolutePath().normalize();

    @TempDir
    Path tmp;

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
    void helpForNoSuchCommandIsAUsageErrorAndHelpForABenchmarkIsThatBenchmarks() throws Exception {
        Result none = run(Map.of(), "help", "nosuch");
        assertEquals(2, none.exit(), none.output());
        assertEquals("lmcache4j: no command 'nosuch' to help with; ./lmcache4j --help lists the commands", none.output().strip());
        Result mp = run(Map.of(), "help", "bench", "mp");
        assertEquals(0, mp.exit(), mp.output());
        assertTrue(mp.output().startsWith("usage: ./lmcache4j bench mp"), mp.output());
        Result noBenchmark = run(Map.of(), "help", "bench", "nosuch");
        assertEquals(2, noBenchmark.exit(), noBenchmark.output());
        Result python = run(Map.of(), "help", "python");
        assertTrue(python.output().startsWith("usage: ./lmcache4j python") && python.output().contains("mp_client.py"),
                python.output());
    }

    /** Without a build: the version is the root pom's, the one every module's jar carries. */
    @Test
    void theVersionIsThePomsAndEveryJavaCommandSaysTheSame() throws Exception {
        Result r = run(Map.of(), "--version");
        assertEquals(0, r.exit(), r.output());
        Matcher pom = Pattern.compile("(?m)^  <version>(.+)</version>").matcher(Files.readString(LAUNCHER.resolveSibling("pom.xml")));
        assertTrue(pom.find());
        assertTrue(r.output().startsWith("lmcache4j " + pom.group(1)), r.output());
        Result demo = sourced("setup_java; run_cli lmcache4j.cli.DemoCommand --version");
        assertEquals(0, demo.exit(), demo.output());
        assertEquals("lmcache4j demo " + pom.group(1), demo.output().strip());
    }

    /**
     * The machine report names the payload tag this JVM offers: with HotSpot's Poly1305 intrinsic
     * turned off (x86-64 at {@code -XX:UseAVX=2}, as on a CPU without AVX-512 IFMA) AES-GCM, unless
     * the property says otherwise. Other CPUs keep their intrinsic: Poly1305.
     */
    @Test
    void theMachineReportNamesThePayloadTagThisJvmComputesFastest() throws Exception {
        String arch = System.getProperty("os.arch");
        boolean x86 = arch.equals("amd64") || arch.equals("x86_64");
        String noIntrinsic = x86 ? "-XX:UseAVX=2" : "";
        Result r = sourced("setup_java; run_cli lmcache4j.cli.MachineReportCommand", Map.of("JAVA_TOOL_OPTIONS", noIntrinsic));
        assertEquals(0, r.exit(), r.output());
        assertTrue(r.output().contains("payload tags   " + (x86 ? "aes-gcm" : "poly1305") + " preferred in keyed handshakes"),
                r.output());
        r = sourced("setup_java; run_cli lmcache4j.cli.MachineReportCommand", Map.of("JAVA_TOOL_OPTIONS",
                noIntrinsic + " -Dlmcache4j.payload_tag=poly1305"));
        assertTrue(r.output().contains("payload tags   poly1305 preferred in keyed handshakes (set by -Dlmcache4j.payload_tag)"),
                r.output());
    }

    /** The MP client of the README runs in the tests' Python environment: the launcher runs that Python. */
    @Test
    void thePythonCommandRunsTheTestsEnvironment() throws Exception {
        TestPython.require();
        Result r = run(Map.of(), "python", "-c", "import sys, msgspec, zmq; print(sys.prefix)");
        assertEquals(0, r.exit(), r.output());
        assertEquals(LAUNCHER.resolveSibling(".cache/python").toString(), r.output().strip());
    }

    /** Commands started together (the controller walkthrough starts three with &) build once, one after the other. */
    @Test
    void concurrentBuildsTakeTurns() throws Exception {
        Path stamp = tmp.resolve("stamp");
        Path log = tmp.resolve("builds");
        String script = "JAVA_HOME=/jdk; STAMP=\"$1\"; LOG=\"$2\"; mvn_run() { echo start >> \"$LOG\"; sleep 1; echo end >> \"$LOG\"; }; "
                + "build_is_stale() { [[ ! -f \"$STAMP\" ]]; }; build 2>/dev/null";
        List<Process> launchers = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            launchers.add(new ProcessBuilder("bash", "-c", "source \"$1\"; shift; " + script, "t", LAUNCHER.toString(),
                    stamp.toString(), log.toString()).redirectErrorStream(true).start());
        }
        for (Process p : launchers) {
            assertTrue(p.waitFor(60, TimeUnit.SECONDS));
            assertEquals(0, p.exitValue(), new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8));
        }
        assertEquals(List.of("start", "end"), Files.readAllLines(log), "one build; the others found it fresh");
    }

    @Test
    void anUnknownCommandFailsAndSaysSo() throws Exception {
        Result r = run(Map.of(), "frobnicate");
        assertEquals(2, r.exit(), "a bad argument, as every command's: " + r.output());
        assertEquals("lmcache4j: unknown command 'frobnicate'; ./lmcache4j --help lists the commands", r.output().strip());
    }

    @Test
    void aJavaHomeTooOldIsPassedOverForAJdk25UnderTheJvmRoot() throws Exception {
        Path root = Files.createDirectories(tmp.resolve("jvm"));
        Path jdk17 = fakeJdk(root.resolve("java-17-openjdk-amd64"), "17.0.2", true);
        fakeJdk(root.resolve("java-21-openjdk-amd64"), "21.0.5", true);
        Path jdk25 = fakeJdk(root.resolve("jdk-25.0.1"), "25.0.1", true);
        Result r = findJdk(root, jdk17);
        assertEquals(0, r.exit(), r.output());
        assertEquals(jdk25.toString(), r.output());
    }

    @Test
    void aJavaHomeOf25OrNewerIsTakenBeforeTheJvmRoot() throws Exception {
        Path root = Files.createDirectories(tmp.resolve("jvm"));
        fakeJdk(root.resolve("temurin-25-jdk-amd64"), "25.0.3", true);
        Path jdk26 = fakeJdk(tmp.resolve("opt/jdk-26"), "26-ea", true);
        Result r = findJdk(root, jdk26);
        assertEquals(0, r.exit(), r.output());
        assertEquals(jdk26.toString(), r.output());
    }

    @Test
    void theTemurin25DirectoryIsTriedBeforeTheOthers() throws Exception {
        Path root = Files.createDirectories(tmp.resolve("jvm"));
        fakeJdk(root.resolve("a-jdk-25"), "25", true);
        Path temurin = fakeJdk(root.resolve("temurin-25-jdk-amd64"), "25.0.3", true);
        Result r = findJdk(root, null);
        assertEquals(0, r.exit(), r.output());
        assertEquals(temurin.toString(), r.output());
    }

    @Test
    void aRuntimeWithoutJavacIsNoJdk() throws Exception {
        Path root = Files.createDirectories(tmp.resolve("jvm"));
        Path jre = fakeJdk(tmp.resolve("jre-25"), "25.0.1", false);
        Path jdk = fakeJdk(root.resolve("zulu-25"), "25.0.1", true);
        Result r = findJdk(root, jre);
        assertEquals(0, r.exit(), r.output());
        assertEquals(jdk.toString(), r.output());
    }

    @Test
    void withoutAReleaseFileTheJavaBinaryIsAskedForItsVersion() throws Exception {
        Path root = Files.createDirectories(tmp.resolve("jvm"));
        Path jdk = fakeJdk(root.resolve("custom-build"), null, true);
        Files.writeString(jdk.resolve("bin/java"), """
                #!/bin/sh
                echo "Property settings:" >&2
                echo "    java.specification.version = 25" >&2
                """);
        Result major = sourced("java_major \"$1\"", jdk.toString());
        assertEquals("25", major.output(), "java_major reads java.specification.version");
        Result r = findJdk(root, null);
        assertEquals(0, r.exit(), r.output());
        assertEquals(jdk.toString(), r.output());
    }

    @ParameterizedTest(name = "JAVA_VERSION=\"{0}\" is {1}")
    @CsvSource({"25, 25", "25.0.1, 25", "25-ea, 25", "26.0.1, 26", "17.0.2, 17", "1.8.0_392, 1"})
    void javaMajorReadsTheFeatureVersionOfTheReleaseFile(String version, String major) throws Exception {
        Path jdk = fakeJdk(tmp.resolve("jdk"), version, true);
        Result r = sourced("java_major \"$1\"", jdk.toString());
        assertEquals(0, r.exit(), r.output());
        assertEquals(major, r.output());
    }

    @Test
    void aBuildBeforeACommandWritesNothingToItsStdout() throws Exception {
        // Maven -q still prints ANSI resets; on stdout they came before demo --json's object.
        Path stamp = tmp.resolve("stamp");
        Result r = sourced("JAVA_HOME=/jdk; mvn_run() { printf '\\033[0m'; echo maven-noise; }; STAMP=\"$1\"; build --force 2>/dev/null",
                stamp.toString());
        assertEquals(0, r.exit(), r.output());
        assertEquals("", r.output(), "the build wrote to stdout");
        assertTrue(Files.exists(stamp));
    }

    @Test
    void withNoJdk25AnywhereTheLauncherStopsAndSaysWhereItLooked() throws Exception {
        Path root = Files.createDirectories(tmp.resolve("jvm"));
        Path jdk17 = fakeJdk(root.resolve("java-17-openjdk-amd64"), "17.0.2", true);
        Result r = sourced("JVM_ROOT=\"$1\"; setup_java", Map.of("JAVA_HOME", jdk17.toString()), root.toString());
        assertEquals(1, r.exit(), r.output());
        assertTrue(r.output().contains("no JDK 25+ found"), r.output());
        assertTrue(r.output().contains(jdk17.toString()) && r.output().contains(root + "/*"), r.output());
    }

    @Test
    void onThisMachineTheJavaCommandPrintsAJdk25EvenWithAnOldJavaHome() throws Exception {
        Result r = run(Map.of("JAVA_HOME", "/usr/lib/jvm/java-17-openjdk-amd64"), "java");
        assertEquals(0, r.exit(), r.output());
        Path jdk = Path.of(r.output().strip());
        assertTrue(Files.isExecutable(jdk.resolve("bin/javac")), r.output());
        Matcher v = Pattern.compile("(?m)^JAVA_VERSION=\"(\\d+)").matcher(Files.readString(jdk.resolve("release")));
        assertTrue(v.find(), "no JAVA_VERSION in " + jdk.resolve("release"));
        assertTrue(Integer.parseInt(v.group(1)) >= 25, "the launcher chose " + jdk + ", JDK " + v.group(1));
    }

    /** glibc's non-temporal threshold is lowered for the JVM (bench store --copy-routine memcpy) unless the user set GLIBC_TUNABLES, even empty. */
    @Test
    void glibcTunablesAreSetOnlyWhereTheUserLeftThemUnset() throws Exception {
        Map<String, String> unset = new HashMap<>();
        unset.put("GLIBC_TUNABLES", null);
        Result r = sourced("glibc_tunables; printf '[%s]' \"$GLIBC_TUNABLES\"", unset);
        assertEquals("[glibc.cpu.x86_non_temporal_threshold=0x4041]", r.output().strip(), r.output());
        for (String own : List.of("glibc.cpu.x86_non_temporal_threshold=0x100000", "")) {
            r = sourced("glibc_tunables; printf '[%s]' \"$GLIBC_TUNABLES\"", Map.of("GLIBC_TUNABLES", own));
            assertEquals("[" + own + "]", r.output().strip(), r.output());
        }
    }

    @Test
    void theTestSuiteMakesItsPythonEnvironmentFromPinnedRequirements() throws Exception {
        // tests/python/ runs in a virtual environment of the real msgspec & co.: python3-venv makes it.
        Result r = sourced("printf '%s\\n' \"${TEST_DEBIAN_PACKAGES[@]}\"; echo \"$TEST_PYTHON_REQUIREMENTS\"");
        assertEquals(0, r.exit(), r.output());
        List<String> lines = r.output().lines().toList();
        assertTrue(lines.containsAll(List.of("python3-venv", "redis-server")), r.output());
        Path requirements = Path.of(lines.getLast());
        List<String> pins = Files.readAllLines(requirements).stream().filter(l -> !l.isBlank() && !l.startsWith("#")).toList();
        assertEquals(List.of("msgspec", "pyzmq", "msgpack", "cbor2", "boto3", "botocore", "s3transfer", "jmespath",
                "python-dateutil", "six", "urllib3"), pins.stream().map(l -> l.substring(0, l.indexOf("=="))).toList(),
                "every package pinned with ==: " + pins);
    }

    /** A directory shaped like a JDK: {@code release} with {@code JAVA_VERSION} (unless null), {@code bin/java}, maybe {@code bin/javac}. */
    private static Path fakeJdk(Path dir, String version, boolean javac) throws IOException {
        Files.createDirectories(dir.resolve("bin"));
        if (version != null) {
            Files.writeString(dir.resolve("release"), "IMPLEMENTOR=\"fake\"\nJAVA_VERSION=\"" + version + "\"\nOS_NAME=\"Linux\"\n");
        }
        executable(dir.resolve("bin/java"));
        if (javac) {
            executable(dir.resolve("bin/javac"));
        }
        return dir;
    }

    private static void executable(Path file) throws IOException {
        Files.writeString(file, "#!/bin/sh\nexit 1\n");
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rwxr-xr-x"));
    }

    /** {@code find_jdk} with the JVM root {@code root} and {@code JAVA_HOME} set to {@code javaHome} (or unset). */
    private static Result findJdk(Path root, Path javaHome) throws IOException, InterruptedException {
        Map<String, String> env = new HashMap<>();
        env.put("JAVA_HOME", javaHome == null ? null : javaHome.toString());
        return sourced("JVM_ROOT=\"$1\"; find_jdk", env, root.toString());
    }

    private static Result sourced(String script, String... args) throws IOException, InterruptedException {
        return sourced(script, Map.of(), args);
    }

    /** Runs {@code script} in bash after sourcing the launcher; {@code $1...} are {@code args}; a null env value unsets it. */
    private static Result sourced(String script, Map<String, String> env, String... args) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(List.of("bash", "-c", "source \"$1\"; shift; " + script, "launcher-test",
                LAUNCHER.toString()));
        cmd.addAll(List.of(args));
        return exec(cmd, env);
    }

    private record Result(int exit, String output) {
    }

    private static Result run(Map<String, String> env, String... args) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(List.of("bash", LAUNCHER.toString()));
        cmd.addAll(List.of(args));
        return exec(cmd, env);
    }

    private static Result exec(List<String> cmd, Map<String, String> env) throws IOException, InterruptedException {
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
        env.forEach((k, v) -> {
            if (v == null) {
                pb.environment().remove(k);
            } else {
                pb.environment().put(k, v);
            }
        });
        Process p = pb.start();
        if (!p.waitFor(60, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError("launcher did not finish: " + cmd);
        }
        return new Result(p.exitValue(), new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8));
    }
}
