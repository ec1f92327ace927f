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
 * both print the same result. The published artifacts carry sources, javadoc and POM metadata.
 */
class ConsumerProjectTest {
    private static final Path PROJECT_TEMPLATE = Path.of("consumer").toAbsolutePath();
    private static final Path QUICKSTART = Path.of("src", "test", "java", "lmcache4j", "tests", "quickstart", "Quickstart.java");
    private static final Path WORK = Path.of("target", "consumer-project").toAbsolutePath();
    /** The consumer build's own local repository, kept between runs so that it works offline once filled. */
    private static final Path CONSUMER_LOCAL_REPOSITORY = Path.of("target", "consumer-local-repository").toAbsolutePath();
    private static final List<String> PUBLISHED = List.of("lmcache4j-cuda-bindings", "lmcache4j-allocator",
            "lmcache4j-engine", "lmcache4j-server", "lmcache4j-bench", "lmcache4j-cli");

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
        Path repository = installedRepository();
        String version = property("lmcache4j.version");
        prepareProject();
        // Fresh lmcache4j artifacts every run: an offline build would keep the snapshots it resolved before.
        deleteTree(CONSUMER_LOCAL_REPOSITORY.resolve("io").resolve("lmcache4j"));

        List<String> maven = new ArrayList<>(List.of(Path.of(property("lmcache4j.maven.home"), "bin", "mvn").toString(),
                "-B", "-ntp", "-Dstyle.color=never",
                "-Dmaven.repo.local=" + CONSUMER_LOCAL_REPOSITORY,
                "-Dlmcache4j.version=" + version,
                "-Dlmcache4j.repository=" + repository.toUri(),
                "-Dthird.party.repository=" + Path.of(property("lmcache4j.maven.localRepository")).toUri(),
                "process-classes"));
        if (property("lmcache4j.maven.offline").equals("offline=true")) {
            // Offline like the outer build; both repositories are local folders, which Maven may read offline.
            maven.addAll(List.of("-o", "-Daether.offline.protocols=file"));
        }
        Run build = run(maven, WORK, 300);
        assertEquals(0, build.exitCode(), "the consumer project's build failed:\n" + build.output());

        List<String> jars = List.of(Files.readString(WORK.resolve("target/runtime-jars.txt")).strip().split(File.pathSeparator));
        checkRuntimeJars(jars);
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
    }

    /** The jars come from the installed artifacts; no test, benchmark or build-only jar reaches a user's runtime. */
    private static void checkRuntimeJars(List<String> jars) throws IOException {
        Set<String> names = new TreeSet<>();
        jars.forEach(j -> names.add(Path.of(j).getFileName().toString()));
        for (String module : List.of("lmcache4j-engine", "lmcache4j-allocator", "lmcache4j-cuda-bindings")) {
            String jar = jars.stream().filter(j -> Path.of(j).getFileName().toString().startsWith(module + "-"))
                    .findFirst().orElseThrow(() -> new AssertionError(module + " is not on the runtime path: " + names));
            assertTrue(Path.of(jar).startsWith(CONSUMER_LOCAL_REPOSITORY), jar + " was not resolved from the installed artifacts");
        }
        for (String forbidden : List.of("junit", "jqwik", "opentest4j", "apiguardian", "jmh", "svm-configure",
                "lmcache4j-bench", "lmcache4j-server", "lmcache4j-cli", "lmcache4j-tests")) {
            assertTrue(names.stream().noneMatch(n -> n.startsWith(forbidden)), forbidden + " leaks into the runtime path: " + names);
        }
        // The Netty a user gets is the Netty this build tests with (the reactor's own runtime jars).
        Set<String> nettyVersions = new TreeSet<>();
        names.stream().filter(n -> n.startsWith("netty-")).forEach(n -> nettyVersions.add(n.replaceAll("^netty-[a-z-]+-|\\.jar$", "")));
        Set<String> reactorNetty = new TreeSet<>();
        try (Stream<Path> lib = Files.list(Path.of("..", "cli", "target", "lib"))) {
            lib.map(p -> p.getFileName().toString()).filter(n -> n.startsWith("netty-"))
                    .forEach(n -> reactorNetty.add(n.replaceAll("^netty-[a-z-]+-|\\.jar$", "")));
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

    private static void prepareProject() throws IOException {
        deleteTree(WORK);
        try (Stream<Path> files = Files.walk(PROJECT_TEMPLATE)) {
            for (Path source : files.filter(Files::isRegularFile).toList()) {
                Path target = WORK.resolve(PROJECT_TEMPLATE.relativize(source).toString());
                Files.createDirectories(target.getParent());
                Files.copy(source, target);
            }
        }
        // The README's quickstart, the same file QuickstartTest compares with the README.
        Path quickstart = WORK.resolve("src/main/java/lmcache4j/tests/quickstart/Quickstart.java");
        Files.createDirectories(quickstart.getParent());
        Files.copy(QUICKSTART, quickstart);
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
