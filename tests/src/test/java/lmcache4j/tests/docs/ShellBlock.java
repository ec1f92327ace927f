package lmcache4j.tests.docs;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * A fenced block of a Markdown page that a reader would paste into a shell: one with no language,
 * or {@code sh}, {@code bash}, {@code shell} or {@code console} (output and diagrams are {@code text}).
 *
 * @param page   the page, as the failure messages name it
 * @param line   the line of the opening fence, from 1
 * @param code   the lines between the fences
 * @param marker what the comment right above it says; empty when there is none (an error)
 */
public record ShellBlock(String page, int line, String code, Optional<DocMarker> marker) {
    private static final Set<String> SHELL = Set.of("", "sh", "bash", "shell", "console");

    /** Where the block is, for messages: {@code docs/mp-server.md:16}. */
    public String where() {
        return page + ":" + line;
    }

    /**
     * The shell blocks of {@code markdown}, each with the marker on the last non-blank line above its
     * fence.
     *
     * @throws IllegalArgumentException when a marker there cannot be read, or a fence is not closed
     */
    public static List<ShellBlock> of(String page, String markdown) {
        List<ShellBlock> blocks = new ArrayList<>();
        String[] lines = markdown.split("\n", -1);
        String lastText = "";
        for (int i = 0; i < lines.length; i++) {
            String l = lines[i];
            if (!l.startsWith("```")) {
                if (!l.isBlank()) {
                    lastText = l;
                }
                continue;
            }
            String language = l.substring(3).strip();
            int end = i + 1;
            while (end < lines.length && !lines[end].startsWith("```")) {
                end++;
            }
            if (end == lines.length) {
                throw new IllegalArgumentException(page + ":" + (i + 1) + ": a fence that is never closed");
            }
            if (SHELL.contains(language)) {
                Optional<DocMarker> marker;
                try {
                    marker = lastText.strip().startsWith(DocMarker.PREFIX) ? Optional.of(DocMarker.parse(lastText))
                            : Optional.empty();
                } catch (IllegalArgumentException e) {
                    throw new IllegalArgumentException(page + ":" + (i + 1) + ": " + e.getMessage(), e);
                }
                blocks.add(new ShellBlock(page, i + 1, String.join("\n", List.of(lines).subList(i + 1, end)) + "\n", marker));
            }
            i = end;
            lastText = "";
        }
        return blocks;
    }
}
