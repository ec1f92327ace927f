package lmcache4j.tests;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;

/**
 * Code the docs show as a file is that file: a block after {@code <!-- example: PATH -->} in
 * README.md or docs/ must equal {@code PATH} (from the repository root) byte for byte, so an
 * example a reader copies is the one a test compiles and runs (ConsumerProjectTest runs the
 * allocator's).
 */
class DocExamplesTest {
    private static final Path ROOT = Path.of("..").toAbsolutePath().normalize();
    private static final Pattern EXAMPLE = Pattern.compile("<!-- example: (\\S+) -->\n```[a-z]*\n(.*?)```\n", Pattern.DOTALL);

    @Test
    void everyExampleBlockIsItsFileVerbatim() throws IOException {
        List<Path> pages = new ArrayList<>(List.of(ROOT.resolve("README.md")));
        try (Stream<Path> docs = Files.walk(ROOT.resolve("docs"))) {
            docs.filter(p -> p.toString().endsWith(".md")).sorted().forEach(pages::add);
        }
        int checked = 0;
        for (Path page : pages) {
            String text = Files.readString(page);
            int markers = text.split("<!-- example: ", -1).length - 1;
            Matcher m = EXAMPLE.matcher(text);
            int blocks = 0;
            while (m.find()) {
                Path file = ROOT.resolve(m.group(1)).normalize();
                assertTrue(file.startsWith(ROOT) && Files.isRegularFile(file), ROOT.relativize(page) + " shows " + m.group(1)
                        + ", which is not a file of the repository");
                assertEquals(Files.readString(file), m.group(2), ROOT.relativize(page) + ": the block after the marker for "
                        + m.group(1) + " must be that file verbatim: copy the file into the block");
                blocks++;
            }
            assertEquals(markers, blocks, ROOT.relativize(page) + ": an example marker not followed by a code block");
            checked += blocks;
        }
        assertFalse(checked < 4, "the docs show at least the allocator's example, module and property: found " + checked);
    }
}
