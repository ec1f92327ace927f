package lmcache4j.tests;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import lmcache4j.tests.quickstart.Quickstart;
import org.junit.jupiter.api.Test;

/**
 * lmcache4j as a stranger gets it: {@code tests/consumer}, a Maven project outside the reactor
 * with a {@code module-info} that {@code requires lmcache4j.engine}, is built with the README's
 * quickstart against the artifacts {@code mvn verify} installed into
 * {@code target/consumer-repository} (never from the reactor's folders), then the quickstart runs
 * on the module path with {@code --enable-native-access=lmcache4j.cuda} and on the class path, and
 * both print the same result; its second program reads a chunk back from a shared store through
 * the exported remote connectors, into memory of an allocator it built itself; its third runs
 * disaggregated prefill's two sides (PdSender and PdReceiver) in one JVM. {@code
 * tests/consumer-allocator} requires {@code lmcache4j.allocator} alone: its jqwik property fuzzes
 * the allocator through the exported packages, and its example (docs/allocator.md) runs. Both
 * compile as modules, so only exported packages are reachable. The published artifacts carry
 * sources, javadoc and POM metadata.
 */
class ConsumerProjectTest {
    private static final Path PROJECT_TEMPLATE = Path.of("consumer").toAbsolutePath();
    private static final Path ALLOCATOR_PROJECT_TEMPLATE = Path.of("consumer-allocator").toAbsolutePath();
    private static final Path ALLOCATOR_WORK = Path.of("target", "consumer-allocator-project").toAbsolutePath();
    private static final Path QUICKSTART = Path.of("src", "test", "java", "lmcache4j", "tests", "quickstart", "Quickstart.java");
    private static final Path WORK = Path.of("target", "consumer-project").toAbsolutePath();
    /** The consumer build's own local repository, kept between runs so that it works offline once filled. */
    private static final Path CONSUMER_LOCAL_REPOSITORY = Path.of("target", "consumer-local-repository").toAbsolutePath();
    private static final List<String> PUBLISHED = List.of("lmcache4j-cuda-bindings", "lmcache4j-allocator",
            "lmcache4j-engine", "lmcache4j-server", "lmcache4j-mp-server", "lmcache4j-bench", "lmcache4j-cli");

    private static String property(String name) {
        String value = System.getProperty(name);
        assertTrue(value != null && !value.isBlank() && !value.startsWith("${"),
                "system property " + name + " is not set: run through Maven (the tests module's surefire configuration sets it)");
        return value;
    }

    private static Path installedRepository() {
        Path repository = Path.of(property("lmcache4j.consumer.repository"));
        assertTrue(Files.isDirectory(repository.resolve("io/lmcache4j/lmcache4j-engine")), repository
                + " has no lmcache4j-engine: `mvn verify` installs the modules there (a build stopped before `verify` does not)");
        return repository;
    }

    @Test
    void aSeparateProjectBuildsAgainstTheInstalledArtifactsAndRunsTheQuickstartOnModuleAndClassPath() throws Exception {
        prepareProject(PROJECT_TEMPLATE, WORK);
        // The README's quickstart, the same file QuickstartTest compares with the README.
        Path quickstart = WORK.resolve("src/main/java/lmcache4j/tests/quickstart/Quickstart.java");
        Files.createDirectories(quickstart.getParent());
        Files.copy(QUICKSTART, quickstart);
        List<String> jars = build(WORK, "process-classes");
        checkRuntimeJars(jars, List.of("lmcache4j-engine", "lmcache4j-allocator", "lmcache4j-cuda-bindings"), List.of());
        String path = WORK.resolve("target/classes") + File.pathSeparator + String.join(File.pathSeparator, jars);
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();

        Run onModulePath = run(List.of(java, "--enable-native-access=lmcache4j.cuda", "--module-path", path,
                "--module", "lmcache4j.consumer/lmcache4j.tests.quickstart.Quickstart"), WORK, 120);
        Run onClassPath = run(List.of(java, "--enable-native-access=ALL-UNNAMED", "--class-path", path,
                "lmcache4j.tests.quickstart.Quickstart"), WORK, 120);
        assertEquals(0, onModulePath.exitCode(), "module path run failed:\n" + onModulePath.output());
        assertEquals(0, onClassPath.exitCode(), "class path run failed:\n" + onClassPath.output());
        String expected = new Quickstart.Result(768, 768, 768, 0).toString();
        assertEquals(expected, onModulePath.stdout().strip(), onModulePath.output());
        assertEquals(onModulePath.stdout(), onClassPath.stdout(), "module path and class path print the same");

        // The remote connectors, used without an engine: memory from the program's own allocator.
        Path store = Files.createDirectories(WORK.resolve("fs-store"));
        Run remote = run(List.of(java, "--enable-native-access=lmcache4j.cuda", "--module-path", path,
                "--module", "lmcache4j.consumer/example.remote.RemoteChunkExample", store.toString()), WORK, 120);
        assertEquals(0, remote.exitCode(), "the remote example failed:\n" + remote.output());
        assertEquals("Result[found=true, bytes=4194304, wrongBytes=0]", remote.stdout().strip(), remote.output());

        // Disaggregated prefill, both sides: a prefiller engine pushes a prompt's KV to a decoder engine's PD receiver.
        Run pd = run(List.of(java, "--enable-native-access=lmcache4j.cuda", "--module-path", path,
                "--module", "lmcache4j.consumer/example.pd.PdExample"), WORK, 120);
        assertEquals(0, pd.exitCode(), "the PD example failed:\n" + pd.output());
        assertEquals("Result[pushedChunks=4, found=1000, retrievedTokens=1000, wrongBytes=0, landedWrites=4, tagFailures=0]",
                pd.stdout().strip(), pd.output());
    }

    @Test
    void aProjectThatRequiresTheAllocatorAloneFuzzesItThroughItsExportsAndRunsTheExample() throws Exception {
        prepareProject(ALLOCATOR_PROJECT_TEMPLATE, ALLOCATOR_WORK);
        List<String> jars = build(ALLOCATOR_WORK, "test"); // test: its jqwik property runs against the installed jars
        checkRuntimeJars(jars, List.of("lmcache4j-allocator", "lmcache4j-cuda-bindings"), List.of("lmcache4j-engine"));
        String reports = Files.readString(ALLOCATOR_WORK.resolve(
                "target/surefire-reports/example.allocator.AllocatorModelProperties.txt"));
        assertTrue(reports.contains("Tests run: 1, Failures: 0, Errors: 0, Skipped: 0"), reports);

        String path = ALLOCATOR_WORK.resolve("target/classes") + File.pathSeparator + String.join(File.pathSeparator, jars);
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        Run example = run(List.of(java, "--enable-native-access=lmcache4j.cuda", "--module-path", path,
                "--module", "example.allocator/example.allocator.AllocatorExample"), ALLOCATOR_WORK, 120);
        assertEquals(0, example.exitCode(), "the allocator example failed:\n" + example.output());
        List<String> lines = example.stdout().lines().toList();
        assertEquals("Result[chunks=16, refilled=8, fragmentsAfterFree=8, fragmentsAtEnd=1, wrongBytes=0]", lines.get(0),
                example.output());
        assertTrue(lines.get(1).startsWith("memory: "), example.output());
    }

    /** Builds {@code project} up to {@code phase} against the installed artifacts; returns its runtime jars. */
    private List<String> build(Path project, String phase) throws Exception {
        Path repository = installedRepository();
        String version = property("lmcache4j.version");
        // Fresh lmcache4j artifacts every run: an offline build would keep the snapshots it resolved before.
        deleteTree(CONSUMER_LOCAL_REPOSITORY.resolve("io").resolve("lmcache4j"));
        List<String> maven = new ArrayList<>(List.of(Path.of(property("lmcache4j.maven.home"), "bin", "mvn").toString(),
                "-B", "-ntp", "-Dstyle.color=never",
                "-Dmaven.repo.local=" + CONSUMER_LOCAL_REPOSITORY,
                "-Dlmcache4j.version=" + version,
                "-Dlmcache4j.repository=" + repository.toUri(),
                "-Dthird.party.repository=" + Path.of(property("lmcache4j.maven.localRepository")).toUri(),
                phase));
        if (property("lmcache4j.maven.offline").equals("offline=true")) {
            // Offline like the outer build; both repositories are local folders, which Maven may read offline.
            maven.addAll(List.of("-o", "-Daether.offline.protocols=file"));
        }
        Run build = run(maven, project, 300);
        assertEquals(0, build.exitCode(), "the consumer project's build failed:\n" + build.output());
        return List.of(Files.readString(project.resolve("target/runtime-jars.txt")).strip().split(File.pathSeparator));
    }

    /**
     * The jars come from the installed artifacts; no test, benchmark or build-only jar reaches a
     * user's runtime, nor a module the project did not ask for ({@code absent}).
     */
    private static void checkRuntimeJars(List<String> jars, List<String> present, List<String> absent) throws IOException {
        Set<String> names = new TreeSet<>();
        jars.forEach(j -> names.add(Path.of(j).getFileName().toString()));
        for (String module : absent) {
            assertTrue(names.stream().noneMatch(n -> n.startsWith(module + "-")), module + " is on the runtime path: " + names);
        }
        for (String module : present) {
            String jar = jars.stream().filter(j -> Path.of(j).getFileName().toString().startsWith(module + "-"))
                    .findFirst().orElseThrow(() -> new AssertionError(module + " is not on the runtime path: " + names));
            assertTrue(Path.of(jar).startsWith(CONSUMER_LOCAL_REPOSITORY), jar + " was not resolved from the installed artifacts");
        }
        for (String forbidden : List.of("junit", "jqwik", "opentest4j", "apiguardian", "jmh", "svm-configure",
                "lmcache4j-bench", "lmcache4j-server", "lmcache4j-mp-server", "lmcache4j-cli", "lmcache4j-tests")) {
            assertTrue(names.stream().noneMatch(n -> n.startsWith(forbidden)), forbidden + " leaks into the runtime path: " + names);
        }
        // The Netty a user gets is the Netty this build tests with (the reactor's own runtime jars).
        // io.netty's jars only (netty-codec-http2-4.2.20.Final.jar), not the AWS SDK's netty-nio-client-2.57.8.jar.
        java.util.regex.Pattern nettyJar = java.util.regex.Pattern.compile("netty-[a-z0-9-]+?-(\\d+\\.\\d+\\.\\d+\\.Final)\\.jar");
        Set<String> nettyVersions = new TreeSet<>();
        names.stream().map(nettyJar::matcher).filter(java.util.regex.Matcher::matches).forEach(m -> nettyVersions.add(m.group(1)));
        Set<String> reactorNetty = new TreeSet<>();
        try (Stream<Path> lib = Files.list(Path.of("..", "cli", "target", "lib"))) {
            lib.map(p -> nettyJar.matcher(p.getFileName().toString())).filter(java.util.regex.Matcher::matches)
                    .forEach(m -> reactorNetty.add(m.group(1)));
        }
        if (nettyVersions.isEmpty() && absent.contains("lmcache4j-engine")) {
            return; // the allocator alone brings no Netty
        }
        assertEquals(1, nettyVersions.size(), "one Netty version: " + names);
        assertEquals(reactorNetty, nettyVersions, "the consumer resolves the Netty lmcache4j is tested with");
    }

    @Test
    void everyPublishedModuleHasSourcesJavadocAndPomMetadata() throws IOException {
        Path repository = installedRepository();
        String version = property("lmcache4j.version");
        Path parent = repository.resolve("io/lmcache4j/lmcache4j-parent/" + version + "/lmcache4j-parent-" + version + ".pom");
        String parentPom = Files.readString(parent);
        for (String element : List.of("<url>", "<description>", "<name>Apache-2.0</name>", "<scm>", "<connection>",
                "<developers>", "<lmcache4j.repository.url>https://")) {
            assertTrue(parentPom.contains(element), parent + " lacks " + element);
        }
        for (String artifact : PUBLISHED) {
            Path folder = repository.resolve("io/lmcache4j/" + artifact + "/" + version);
            for (String suffix : List.of(".jar", "-sources.jar", "-javadoc.jar", ".pom")) {
                Path file = folder.resolve(artifact + "-" + version + suffix);
                assertTrue(Files.size(file) > 0, file + " is missing or empty");
            }
            String pom = Files.readString(folder.resolve(artifact + "-" + version + ".pom"));
            assertTrue(pom.contains("<name>") && pom.contains("<description>"), artifact + "'s POM has a name and a description");
            assertFalse(pom.contains("<scope>compile</scope>") && pom.contains("junit"), artifact + " ships a test dependency");
        }
    }

    private static void prepareProject(Path template, Path work) throws IOException {
        deleteTree(work);
        try (Stream<Path> files = Files.walk(template)) {
            for (Path source : files.filter(Files::isRegularFile).toList()) {
                Path target = work.resolve(template.relativize(source).toString());
                Files.createDirectories(target.getParent());
                Files.copy(source, target);
            }
        }
    }

    private static void deleteTree(Path root) throws IOException {
        if (Files.exists(root)) {
            try (Stream<Path> files = Files.walk(root)) {
                for (Path p : files.sorted(Comparator.reverseOrder()).toList()) {
                    Files.delete(p);
                }
            }
        }
    }

    private record Run(int exitCode, String stdout, String output) {
    }

    private static Run run(List<String> command, Path directory, int timeoutSeconds) throws IOException, InterruptedException {
        Path stdout = Files.createTempFile(WORK.getParent(), "consumer-out", ".txt");
        Path stderr = Files.createTempFile(WORK.getParent(), "consumer-err", ".txt");
        ProcessBuilder builder = new ProcessBuilder(command).directory(directory.toFile())
                .redirectOutput(stdout.toFile()).redirectError(stderr.toFile());
        builder.environment().put("JAVA_HOME", System.getProperty("java.home"));
        builder.environment().put("MAVEN_OPTS", "--sun-misc-unsafe-memory-access=allow");
        Process process = builder.start();
        if (!process.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
            process.destroyForcibly().waitFor();
            throw new AssertionError(String.join(" ", command) + " ran past " + timeoutSeconds + " s:\n"
                    + Files.readString(stdout) + Files.readString(stderr));
        }
        String out = Files.readString(stdout);
        String all = String.join(" ", command) + "\n" + out + Files.readString(stderr);
        Files.delete(stdout);
        Files.delete(stderr);
        return new Run(process.exitValue(), out, all);
    }
}
