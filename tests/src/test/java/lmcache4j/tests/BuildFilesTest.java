package lmcache4j.tests;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;

/** The build's own files: what Maven would only warn about, and what the launcher promises about them. */
class BuildFilesTest {
    static final Path ROOT = Path.of("..").toAbsolutePath().normalize();
    private static final Pattern COMMENT = Pattern.compile("<!--.*?-->", Pattern.DOTALL);
    private static final Pattern PLUGINS = Pattern.compile("<plugins>(.*?)</plugins>", Pattern.DOTALL);
    private static final Pattern PLUGIN = Pattern.compile("<plugin>(.*?)</plugin>", Pattern.DOTALL);

    static List<Path> poms() throws IOException {
        List<Path> poms = new ArrayList<>(List.of(ROOT.resolve("pom.xml")));
        try (Stream<Path> modules = Files.list(ROOT)) {
            modules.map(m -> m.resolve("pom.xml")).filter(Files::isRegularFile).sorted().forEach(poms::add);
        }
        return poms;
    }

    /** {@code groupId:artifactId} of every plugin declared twice in one {@code <plugins>} section of {@code pom}. */
    static List<String> duplicatePlugins(String pom) {
        List<String> duplicates = new ArrayList<>();
        Matcher section = PLUGINS.matcher(COMMENT.matcher(pom).replaceAll(""));
        while (section.find()) {
            Set<String> seen = new HashSet<>();
            Matcher plugin = PLUGIN.matcher(section.group(1));
            while (plugin.find()) {
                String id = element(plugin.group(1), "groupId", "org.apache.maven.plugins") + ":"
                        + element(plugin.group(1), "artifactId", "?");
                if (!seen.add(id)) {
                    duplicates.add(id);
                }
            }
        }
        return duplicates;
    }

    /** The first {@code <name>} element's text (a plugin's own coordinates come before its dependencies'). */
    private static String element(String xml, String name, String absent) {
        Matcher m = Pattern.compile("<" + name + ">\\s*([^<]*?)\\s*</" + name + ">").matcher(xml);
        return m.find() ? m.group(1) : absent;
    }

    @Test
    void noPomDeclaresAPluginTwiceInOneSection() throws IOException {
        List<Path> poms = poms();
        assertTrue(poms.size() >= 6, "the parent and its five modules: " + poms);
        for (Path pom : poms) {
            assertEquals(List.of(), duplicatePlugins(Files.readString(pom)),
                    pom + ": Maven warns about a plugin declared twice; give the one declaration several executions");
        }
    }

    /**
     * A test that cannot run where it lacks something must say so loudly in CI: skips go through
     * the engine's {@code TestPrerequisites}, never a bare JUnit assumption or {@code @Disabled}.
     */
    @Test
    void noTestSkipsExceptThroughTestPrerequisites() throws IOException {
        Pattern skip = Pattern.compile("\\bassume(True|False|ingThat)\\(|Assumptions\\.|@Disabled\\b");
        List<String> offenders = new ArrayList<>();
        try (Stream<Path> files = Files.walk(ROOT, 12)) {
            for (Path f : (Iterable<Path>) files.filter(p -> p.toString().endsWith(".java"))
                    .filter(p -> p.toString().contains("/src/test/java/"))::iterator) {
                String name = f.getFileName().toString();
                if (name.equals("TestPrerequisites.java") || name.equals("BuildFilesTest.java")) {
                    continue;
                }
                if (skip.matcher(Files.readString(f)).find()) {
                    offenders.add(ROOT.relativize(f).toString());
                }
            }
        }
        assertEquals(List.of(), offenders, "use TestPrerequisites.require(present, what): it skips on a developer's "
                + "machine and fails in CI");
    }

    /** The soak duration the launcher's help advertises reaches SoakTest, and CI's default is short. */
    @Test
    void theSoakDurationTheLauncherDocumentsReachesTheSoakTest() throws IOException {
        String launcher = Files.readString(ROOT.resolve("lmcache4j"));
        assertTrue(launcher.contains("./lmcache4j test -Dlmcache4j.soak.seconds=600"), "the launcher's test help names the soak");
        assertTrue(System.getProperty("lmcache4j.soak.seconds") != null,
                "surefire passes -Dlmcache4j.soak.seconds to the tests (the parent pom's systemPropertyVariables)");
        Matcher byDefault = Pattern.compile("<properties>.*<lmcache4j\\.soak\\.seconds>(\\d+)</lmcache4j\\.soak\\.seconds>",
                Pattern.DOTALL).matcher(Files.readString(ROOT.resolve("pom.xml")));
        assertTrue(byDefault.find() && Integer.parseInt(byDefault.group(1)) <= 60, "CI's soak is short by default");
        String soak = Files.readString(ROOT.resolve("tests/src/test/java/lmcache4j/tests/SoakTest.java"));
        assertTrue(soak.contains("Long.getLong(\"lmcache4j.soak.seconds\""), "SoakTest reads the duration");
    }

    @Test
    void theDuplicateCheckFindsADuplicate() {
        String pom = """
                <build><plugins>
                  <plugin><!-- one --><artifactId>maven-dependency-plugin</artifactId></plugin>
                  <plugin><groupId>org.apache.maven.plugins</groupId><artifactId>maven-jar-plugin</artifactId>
                    <dependencies><dependency><artifactId>maven-dependency-plugin</artifactId></dependency></dependencies>
                  </plugin>
                  <plugin>
                    <groupId>org.apache.maven.plugins</groupId>
                    <artifactId>maven-dependency-plugin</artifactId>
                  </plugin>
                </plugins></build>
                """;
        assertEquals(List.of("org.apache.maven.plugins:maven-dependency-plugin"), duplicatePlugins(pom));
    }
}
