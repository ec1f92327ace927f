package lmcache4j.engine.config;

import java.util.List;

/**
 * A config that cannot be used: unknown or unsupported keys, bad values, conflicting aliases,
 * an unreadable file. Carries every problem found (loading does not stop at the first), each
 * naming the key, the value, its source and what would be valid.
 */
public final class ConfigException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    private final transient List<String> problems;

    ConfigException(List<String> problems) {
        super(message(problems));
        this.problems = List.copyOf(problems);
    }

    ConfigException(String problem) {
        this(List.of(problem));
    }

    /** Each problem, one sentence per entry, in the order they were found. */
    public List<String> problems() {
        return problems;
    }

    private static String message(List<String> problems) {
        if (problems.size() == 1) {
            return "invalid lmcache4j config: " + problems.getFirst();
        }
        StringBuilder sb = new StringBuilder("invalid lmcache4j config (" + problems.size() + " problems):");
        for (String p : problems) {
            sb.append("\n  - ").append(p);
        }
        return sb.toString();
    }
}
