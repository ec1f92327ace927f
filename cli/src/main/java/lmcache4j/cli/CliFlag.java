package lmcache4j.cli;

/**
 * One command-line argument split the way every lmcache4j command reads them: {@code --name=value}
 * gives a name and a value; anything else is a bare name whose value, if it takes one, is the next
 * argument.
 *
 * @param name  {@code --name}, or the whole argument
 * @param value the part after {@code =}, or null
 * @param raw   the argument as given, for messages
 */
record CliFlag(String name, String value, String raw) {

    static CliFlag of(String arg) {
        int eq = arg.indexOf('=');
        return arg.startsWith("--") && eq > 0 ? new CliFlag(arg.substring(0, eq), arg.substring(eq + 1), arg)
                : new CliFlag(arg, null, arg);
    }

    /** Whether a value was given inline ({@code --name=value}). */
    boolean hasValue() {
        return value != null;
    }
}
