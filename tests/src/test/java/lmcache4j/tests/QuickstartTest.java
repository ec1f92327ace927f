package lmcache4j.tests;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import lmcache4j.tests.quickstart.Quickstart;
import org.junit.jupiter.api.Test;

/**
 * The README's library quickstart is {@code quickstart/Quickstart.java}, compiled and run here, so
 * the example a newcomer copies cannot rot: the README's marked code block must be that file,
 * byte for byte, and its module-info block the {@code requires} this module (a user of the library)
 * declares.
 */
class QuickstartTest {
    private static final Path README = Path.of("..", "README.md").toAbsolutePath().normalize();
    private static final Path EXAMPLE = Path.of("src", "test", "java", "lmcache4j", "tests", "quickstart", "Quickstart.java");
    private static final String BEGIN = "<!-- quickstart: tests/src/test/java/lmcache4j/tests/quickstart/Quickstart.java -->\n```java\n";
    private static final String MODULE_BEGIN = "<!-- quickstart: module-info.java -->\n```java\n";
    private static final String END = "```\n";

    @Test
    void theExampleStoresLooksUpAndRetrievesEveryByteOfThreeChunks() {
        Quickstart.Result r = Quickstart.run();
        assertEquals(768, r.stored(), "three full 256-token chunks of 1,000 tokens; the partial tail is not saved");
        assertEquals(768, r.found());
        assertEquals(768, r.loaded());
        assertEquals(0, r.wrongTokens(), "every retrieved K and V vector equals the stored one");
    }

    @Test
    void theReadmeShowsTheExampleVerbatim() throws IOException {
        assertEquals(Files.readString(EXAMPLE), block(BEGIN),
                "README.md's quickstart block must be " + EXAMPLE + " verbatim: copy the file into the block");
    }

    @Test
    void theReadmeModuleInfoRequiresWhatThisModuleRequires() throws IOException {
        String moduleInfo = block(MODULE_BEGIN);
        assertTrue(moduleInfo.contains("requires lmcache4j.engine;"), moduleInfo);
        assertTrue(getClass().getModule().getDescriptor().requires().stream()
                .anyMatch(r -> r.name().equals("lmcache4j.engine")), "this module compiles the example with that requires");
    }

    private static String block(String begin) throws IOException {
        String readme = Files.readString(README);
        int start = readme.indexOf(begin);
        assertTrue(start >= 0, "README.md has no block starting with " + begin.lines().findFirst().orElseThrow());
        start += begin.length();
        int end = readme.indexOf(END, start);
        assertTrue(end >= 0, "README.md's block has no closing ```");
        return readme.substring(start, end);
    }
}
