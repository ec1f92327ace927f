package lmcache4j.tests;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;

/**
 * The README stays short enough to read (the long explanations live in {@code docs/}), and every
 * relative link in README.md and docs/*.md leads to a file of this repository, and to a heading
 * of that file where the link names one.
 */
class ReadmeTest {
    static final long MAX_README_BYTES = 12_000;

    private static final Path ROOT = Path.of("..").toAbsolutePath().normalize();
    private static final Path README = ROOT.resolve("README.md");
    private static final Pattern LINK = Pattern.compile("\\]\\(([^)\\s]+)\\)");
    private static final Pattern INLINE_CODE = Pattern.compile("`[^`]*`");
    private static final Pattern HEADING = Pattern.compile("^#{1,6}\\s+(.*?)\\s*#*\\s*$");

    @Test
    void theReadmeIsAtMost12000Bytes() throws IOException {
        long size = Files.size(README);
        assertTrue(size <= MAX_README_BYTES, "README.md is " + size + " bytes, more than " + MAX_README_BYTES
                + ": move long explanations into docs/ and link to them");
    }

    @Test
    void theReadmeDoesNotLinkToTheSharedFolder() throws IOException {
        assertFalse(Files.readString(README).contains("../shared"),
                "README.md names ../shared, which a clone of this repository does not have");
    }

    @Test
    void everyRelativeLinkLeadsToAFileOfThisRepository() throws IOException {
        List<String> broken = new ArrayList<>();
        Map<Path, Set<String>> anchors = new HashMap<>();
        for (Path page : pages()) {
            for (String target : links(Files.readString(page))) {
                if (target.contains("://") || target.startsWith("mailto:")) {
                    continue; // not a file of this repository
                }
                int hash = target.indexOf('#');
                String file = hash < 0 ? target : target.substring(0, hash);
                String anchor = hash < 0 ? "" : target.substring(hash + 1);
                Path resolved = file.isEmpty() ? page : page.getParent().resolve(file).normalize();
                String where = ROOT.relativize(page) + ": (" + target + ")";
                if (!resolved.startsWith(ROOT)) {
                    broken.add(where + " leaves the repository");
                } else if (!Files.exists(resolved)) {
                    broken.add(where + " names a file that does not exist");
                } else if (!anchor.isEmpty() && resolved.toString().endsWith(".md")
                        && !anchors.computeIfAbsent(resolved, ReadmeTest::headingAnchors).contains(anchor)) {
                    broken.add(where + " names a heading " + ROOT.relativize(resolved) + " does not have");
                }
            }
        }
        assertEquals(List.of(), broken, "broken links");
    }

    @Test
    void headingAnchorsAreGitHubs() {
        Set<String> a = headingAnchors(String.join("\n", "# Performance", "### Many instances: `demo --instances`",
                "#### lm://: an off-heap server", "```", "# not a heading", "```", "## History", "## History",
                "### Time to first token on a real transformer (Jlama)"));
        assertEquals(Set.of("performance", "many-instances-demo---instances", "lm-an-off-heap-server", "history",
                "history-1", "time-to-first-token-on-a-real-transformer-jlama"), a);
    }

    private static List<Path> pages() throws IOException {
        List<Path> pages = new ArrayList<>(List.of(README));
        try (Stream<Path> docs = Files.list(ROOT.resolve("docs"))) {
            docs.filter(p -> p.toString().endsWith(".md")).sorted().forEach(pages::add);
        }
        return pages;
    }

    /** Link targets outside fenced code blocks and inline code. */
    private static List<String> links(String markdown) {
        List<String> targets = new ArrayList<>();
        for (String line : prose(markdown)) {
            Matcher m = LINK.matcher(INLINE_CODE.matcher(line).replaceAll("``"));
            while (m.find()) {
                targets.add(m.group(1));
            }
        }
        return targets;
    }

    private static Set<String> headingAnchors(Path page) {
        try {
            return headingAnchors(Files.readString(page));
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /** The anchors GitHub gives a page's headings: lower case, punctuation dropped, spaces as hyphens, repeats numbered. */
    static Set<String> headingAnchors(String markdown) {
        Set<String> anchors = new HashSet<>();
        Map<String, Integer> seen = new HashMap<>();
        for (String line : prose(markdown)) {
            Matcher m = HEADING.matcher(line);
            if (m.matches()) {
                String slug = m.group(1).toLowerCase(Locale.ROOT).replaceAll("[^\\p{L}\\p{M}\\p{N}\\p{Pc} -]", "")
                        .replace(' ', '-');
                int n = seen.merge(slug, 1, Integer::sum) - 1;
                anchors.add(n == 0 ? slug : slug + "-" + n);
            }
        }
        return anchors;
    }

    /** The lines of a page outside its fenced code blocks. */
    private static List<String> prose(String markdown) {
        List<String> lines = new ArrayList<>();
        boolean inFence = false;
        for (String line : markdown.split("\n", -1)) {
            if (line.strip().startsWith("```")) {
                inFence = !inFence;
            } else if (!inFence) {
                lines.add(line);
            }
        }
        return lines;
    }
}
