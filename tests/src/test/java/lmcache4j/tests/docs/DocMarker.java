package lmcache4j.tests.docs;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * What a page says about one of its shell blocks, in the HTML comment right above it (invisible on
 * GitHub): {@code <!-- docs-test: ACTION[; MODIFIER]... -->}. Actions:
 * <ul>
 *   <li>{@code run}: pasted into the page's shell, from the repository's root; every command must succeed;</li>
 *   <li>{@code run while serving}: the same, while the page's last {@code serves} block still serves;</li>
 *   <li>{@code serves until it prints: TEXT}: a command that serves until Ctrl-C, run as in a second
 *       terminal: ready once a line contains TEXT; Ctrl-C before the next block not run while it
 *       serves, and then it must exit 0;</li>
 *   <li>{@code not run: REASON}: shown, not run here, and why.</li>
 * </ul>
 * Modifiers: {@code prints: TEXT} (the output contains it), {@code creates: F...} (files or folders
 * of the repository's root it makes; there must be none of that name before, and they are removed
 * after the page), {@code waits for: F...} (run once these exist), {@code slow} (run only with
 * {@code -Dlmcache4j.docs.slow=true}).
 *
 * @param action    what to do with the block
 * @param text      the TEXT of {@code serves until it prints} or the REASON of {@code not run}; else empty
 * @param prints    what the output must contain
 * @param creates   what the block makes in the repository's root
 * @param waitsFor  files that must exist before it runs
 * @param slow      whether it runs only when slow blocks are asked for
 */
public record DocMarker(Action action, String text, Optional<String> prints, List<String> creates, List<String> waitsFor,
                        boolean slow) {
    /** The comment's opening, which every marker starts with. */
    public static final String PREFIX = "<!-- docs-test:";

    /** What the test does with a block. */
    public enum Action {
        RUN, RUN_WHILE_SERVING, SERVES, NOT_RUN
    }

    /**
     * The marker in {@code comment}, a whole {@code <!-- docs-test: ... -->} line.
     *
     * @throws IllegalArgumentException naming what in it is not understood
     */
    public static DocMarker parse(String comment) {
        String c = comment.strip();
        if (!c.startsWith(PREFIX) || !c.endsWith("-->")) {
            throw new IllegalArgumentException("not a marker: " + c + " (" + PREFIX + " ACTION; ... -->)");
        }
        String body = c.substring(PREFIX.length(), c.length() - 3).strip();
        if (body.startsWith("not run:")) { // its reason is free text, ';' included
            String reason = body.substring("not run:".length()).strip();
            if (reason.isEmpty()) {
                throw new IllegalArgumentException("'not run' needs a reason: " + c);
            }
            return new DocMarker(Action.NOT_RUN, reason, Optional.empty(), List.of(), List.of(), false);
        }
        String[] parts = body.split(";");
        Action action;
        String text = "";
        String first = parts[0].strip();
        if (first.equals("run")) {
            action = Action.RUN;
        } else if (first.equals("run while serving")) {
            action = Action.RUN_WHILE_SERVING;
        } else if (first.startsWith("serves until it prints:")) {
            action = Action.SERVES;
            text = first.substring("serves until it prints:".length()).strip();
            if (text.isEmpty()) {
                throw new IllegalArgumentException("'serves until it prints:' needs the text of its ready line: " + c);
            }
        } else {
            throw new IllegalArgumentException("unknown action '" + first + "' in " + c
                    + " (run, run while serving, serves until it prints: TEXT, not run: REASON)");
        }
        Optional<String> prints = Optional.empty();
        List<String> creates = new ArrayList<>();
        List<String> waitsFor = new ArrayList<>();
        boolean slow = false;
        for (int i = 1; i < parts.length; i++) {
            String m = parts[i].strip();
            if (m.equals("slow")) {
                slow = true;
            } else if (m.startsWith("prints:") && !m.substring(7).isBlank()) {
                prints = Optional.of(m.substring(7).strip());
            } else if (m.startsWith("creates:") && !m.substring(8).isBlank()) {
                creates.addAll(List.of(m.substring(8).strip().split("\\s+")));
            } else if (m.startsWith("waits for:") && !m.substring(10).isBlank()) {
                waitsFor.addAll(List.of(m.substring(10).strip().split("\\s+")));
            } else {
                throw new IllegalArgumentException("unknown modifier '" + m + "' in " + c
                        + " (prints: TEXT, creates: FILES, waits for: FILES, slow)");
            }
        }
        for (String f : creates) {
            if (f.contains("/") || f.equals("..") || f.equals(".")) {
                throw new IllegalArgumentException("creates: names entries of the repository's root, got '" + f + "' in " + c);
            }
        }
        return new DocMarker(action, text, prints, List.copyOf(creates), List.copyOf(waitsFor), slow);
    }
}
