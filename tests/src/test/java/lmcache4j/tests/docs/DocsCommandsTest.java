package lmcache4j.tests.docs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import lmcache4j.tests.TestPrerequisites;

/**
 * Every command README.md and docs/ show runs as a newcomer pastes it, on a machine whose default
 * {@code java} is older than 25: the shell blocks each say, in a marker comment ({@link DocMarker}),
 * whether they run here, and those that do are pasted, page by page, into a bash in the
 * repository's root with a {@code java} and {@code javac} first on the PATH that fail (the
 * machine's old default) and no {@code JAVA_HOME}. Each must succeed, print what its marker says,
 * leave the shell's umask alone and print no JVM warning about {@code sun.misc.Unsafe} or native
 * access, and a command that serves must stop with status 0 on Ctrl-C.
 *
 * <p>The commands run on the modules this build made ({@code LMCACHE4J_SKIP_BUILD=1}: no Maven
 * inside Maven); {@code ./lmcache4j python} uses the tests' Python environment. They bind the
 * documented ports (5555, 8080, 8300, 8301, 8400, 9000): a machine where something else holds one
 * fails here, with the server's own "address ... already in use" line. The slow blocks (the
 * controller walkthrough: two demo engines, about a minute on two cores; the Jlama example's
 * compile and run, half a minute) run with {@code -Dlmcache4j.docs.slow=true}.
 */
class DocsCommandsTest {
    private static final Path ROOT = Path.of("..").toAbsolutePath().normalize();
    private static final boolean SLOW = Boolean.getBoolean("lmcache4j.docs.slow");
    private static final Duration BLOCK_TIMEOUT = Duration.ofMinutes(5);
    private static final Duration READY_TIMEOUT = Duration.ofMinutes(2);
    /** What the JDK prints when a library reaches for sun.misc.Unsafe or native access unasked. */
    private static final Pattern JVM_WARNING = Pattern.compile("^WARNING: .*(sun\\.misc\\.Unsafe|restricted method|"
            + "enable-native-access)");

    @TempDir
    Path tmp;

    /** README.md, docs/*.md and docs/design/*.md with their shell blocks, in that order. */
    private static Map<String, List<ShellBlock>> pages() throws IOException {
        List<Path> files = new ArrayList<>(List.of(ROOT.resolve("README.md")));
        for (Path dir : List.of(ROOT.resolve("docs"), ROOT.resolve("docs/design"))) {
            try (Stream<Path> s = Files.list(dir)) {
                s.filter(p -> p.toString().endsWith(".md")).sorted().forEach(files::add);
            }
        }
        Map<String, List<ShellBlock>> pages = new LinkedHashMap<>();
        for (Path f : files) {
            String name = ROOT.relativize(f).toString();
            pages.put(name, ShellBlock.of(name, Files.readString(f)));
        }
        return pages;
    }

    @Test
    void everyShellBlockSaysWhetherItRuns() throws IOException {
        List<String> unmarked = new ArrayList<>();
        int run = 0;
        for (List<ShellBlock> blocks : pages().values()) {
            for (ShellBlock b : blocks) {
                if (b.marker().isEmpty()) {
                    unmarked.add(b.where());
                } else if (b.marker().get().action() != DocMarker.Action.NOT_RUN) {
                    run++;
                }
            }
        }
        assertEquals(List.of(), unmarked, "shell blocks without a '" + DocMarker.PREFIX + " ... -->' line above them "
                + "(run, serves until it prints: TEXT, not run: WHY; output and diagrams are ```text)");
        assertTrue(run >= 10, "most commands the docs show run here: " + run);
    }

    @Test
    void markersAreReadAsWrittenAndBadOnesAreRefused() {
        DocMarker m = DocMarker.parse("<!-- docs-test: run; slow; creates: a.json b.json; waits for: c; prints: \"ok\": true -->");
        assertEquals(new DocMarker(DocMarker.Action.RUN, "", Optional.of("\"ok\": true"), List.of("a.json", "b.json"), List.of("c"),
                true), m);
        assertEquals("mp-server listening on", DocMarker.parse("<!-- docs-test: serves until it prints: mp-server listening on -->")
                .text());
        assertEquals("minutes; see X", DocMarker.parse("<!-- docs-test: not run: minutes; see X -->").text());
        for (String bad : List.of("<!-- docs-test: go -->", "<!-- docs-test: not run: -->", "<!-- docs-test: run; loud -->",
                "<!-- docs-test: run; creates: ../x -->", "<!-- docs-test: serves until it prints: -->")) {
            assertThrows(IllegalArgumentException.class, () -> DocMarker.parse(bad), bad);
        }
        List<ShellBlock> blocks = ShellBlock.of("page.md", String.join("\n", "# t", "<!-- docs-test: run -->", "", "```",
                "echo hi", "```", "```text", "not a command", "```", "```java", "int x;", "```", "```sh", "ls", "```", ""));
        assertEquals(2, blocks.size(), blocks.toString());
        assertEquals("echo hi\n", blocks.get(0).code());
        assertEquals("page.md:4", blocks.get(0).where());
        assertTrue(blocks.get(1).marker().isEmpty(), "the sh block has no marker");
    }

    /** The checks fail as they should: a failing command, a leaked umask, a server that never gets ready. */
    @Test
    void theSessionFailsABlockThatFailsAndOneThatLeavesAUmask() throws Exception {
        try (DocSession s = new DocSession(tmp, environment())) {
            assertEquals("hi", s.run(block("echo hi"), Duration.ofSeconds(30)).strip());
            assertEquals("kept", s.run(block("x=kept"), Duration.ofSeconds(30)).strip() + s.run(block("echo $x"),
                    Duration.ofSeconds(30)).strip(), "one shell: a variable carries over");
            AssertionError umask = assertThrows(AssertionError.class, () -> s.run(block("umask 077; true"), Duration.ofSeconds(30)));
            assertTrue(umask.getMessage().contains("umask 0077"), umask.getMessage());
        }
        try (DocSession s = new DocSession(tmp, environment())) {
            s.run(block("(umask 077; echo secret > made)"), Duration.ofSeconds(30));
            assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(tmp.resolve("made"))));
            AssertionError failed = assertThrows(AssertionError.class, () -> s.run(block("false | cat\necho after"),
                    Duration.ofSeconds(30)));
            assertTrue(failed.getMessage().contains("failed: a command exited 1"), failed.getMessage());
        }
        try (DocSession s = new DocSession(tmp, environment())) {
            AssertionError java = assertThrows(AssertionError.class, () -> s.run(block("java -version"), Duration.ofSeconds(30)));
            assertTrue(java.getMessage().contains("the machine's default java"), java.getMessage());
            ShellBlock silent = new ShellBlock("page.md", 1, "sleep 60\n",
                    Optional.of(DocMarker.parse("<!-- docs-test: serves until it prints: ready -->")));
            AssertionError never = assertThrows(AssertionError.class, () -> s.serve(silent, Duration.ofSeconds(1)));
            assertTrue(never.getMessage().contains("never printed 'ready'"), never.getMessage());
        }
    }

    @Test
    @Timeout(1800)
    void theBlocksMeantToRunRunAsPasted() throws Exception {
        TestPrerequisites.require(Files.isDirectory(ROOT.resolve("cli/target/lib")),
                "the modules built into cli/target/lib (the reactor builds them before this module's tests)");
        for (Map.Entry<String, List<ShellBlock>> page : pages().entrySet()) {
            List<ShellBlock> blocks = page.getValue().stream()
                    .filter(b -> b.marker().orElseThrow().action() != DocMarker.Action.NOT_RUN)
                    .filter(b -> SLOW || !b.marker().get().slow()).toList();
            if (!blocks.isEmpty()) {
                runPage(page.getKey(), blocks);
            }
        }
    }

    private void runPage(String page, List<ShellBlock> blocks) throws Exception {
        List<Path> created = new ArrayList<>();
        for (ShellBlock b : blocks) {
            for (String f : b.marker().orElseThrow().creates()) {
                Path p = ROOT.resolve(f);
                assertFalse(Files.exists(p), b.where() + " creates " + p + ", which exists already: move it away (this test "
                        + "removes what the docs' commands create)");
                created.add(p);
            }
        }
        try (DocSession session = new DocSession(ROOT, environment())) {
            for (ShellBlock b : blocks) {
                DocMarker m = b.marker().orElseThrow();
                long start = System.nanoTime();
                if (m.action() != DocMarker.Action.RUN_WHILE_SERVING) {
                    checkOutput(b, session.stopServer());
                }
                if (m.action() == DocMarker.Action.SERVES) {
                    session.serve(b, READY_TIMEOUT);
                    System.out.printf("docs: %s serves (%.1f s to start)%n", b.where(), (System.nanoTime() - start) / 1e9);
                    continue;
                }
                if (m.action() == DocMarker.Action.RUN_WHILE_SERVING) {
                    assertTrue(session.serving(), b.where() + " runs while a server serves, but no block above it serves");
                }
                session.awaitFiles(b, m.waitsFor(), BLOCK_TIMEOUT);
                String output = session.run(b, BLOCK_TIMEOUT);
                checkOutput(b, output);
                m.prints().ifPresent(text -> assertTrue(output.contains(text), b.where() + " should print '" + text + "'\n"
                        + output));
                System.out.printf("docs: %s ran in %.1f s%n", b.where(), (System.nanoTime() - start) / 1e9);
            }
            checkOutput(blocks.getLast(), session.stopServer());
            checkOutput(blocks.getFirst(), session.shellOutput());
        } finally {
            for (Path p : created) {
                deleteTree(p);
            }
        }
    }

    private static void checkOutput(ShellBlock b, String output) {
        output.lines().filter(l -> JVM_WARNING.matcher(l).find()).findFirst().ifPresent(l -> {
            throw new AssertionError("a command of " + b.page() + " printed a JVM warning: " + l + "\n" + output);
        });
    }

    /**
     * A newcomer's environment: this one, without JAVA_HOME, and a PATH whose java and javac are
     * the machine's old default (they fail); commands use the modules this build made.
     */
    private Map<String, String> environment() throws IOException {
        Path bin = Files.createDirectories(tmp.resolve("old-default-jdk/bin"));
        for (String tool : List.of("java", "javac")) {
            Path script = bin.resolve(tool);
            if (!Files.exists(script)) {
                Files.writeString(script, "#!/bin/sh\necho \"plain " + tool + " is the machine's default java, older than 25 "
                        + "(DocsCommandsTest): use the JDK ./lmcache4j java prints\" >&2\nexit 1\n");
                Files.setPosixFilePermissions(script, PosixFilePermissions.fromString("rwxr-xr-x"));
            }
        }
        Map<String, String> env = new HashMap<>(System.getenv());
        env.remove("JAVA_HOME");
        env.put("PATH", bin + ":" + System.getenv().getOrDefault("PATH", "/usr/bin:/bin"));
        env.put("LMCACHE4J_SKIP_BUILD", "1");
        env.put("PYTHONDONTWRITEBYTECODE", "1");
        return env;
    }

    private static ShellBlock block(String code) {
        return new ShellBlock("page.md", 1, code + "\n", Optional.of(DocMarker.parse("<!-- docs-test: run -->")));
    }

    private static void deleteTree(Path p) throws IOException {
        if (!Files.exists(p)) {
            return;
        }
        try (Stream<Path> all = Files.walk(p)) {
            for (Path q : all.sorted(Comparator.reverseOrder()).toList()) {
                Files.delete(q);
            }
        }
    }
}
