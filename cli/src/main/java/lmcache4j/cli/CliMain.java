package lmcache4j.cli;

import java.io.PrintStream;
import java.util.function.IntSupplier;

/**
 * How every command's {@code main} ends: with the command's exit status, and, should a failure
 * escape the command, with one line on stderr and status 1 instead of a stack trace (set
 * {@value #TRACES_VARIABLE}=1 to see the trace as well).
 */
final class CliMain {
    /** The environment variable that asks for the stack trace of an unexpected failure. */
    static final String TRACES_VARIABLE = "LMCACHE4J_STACK_TRACES";

    private CliMain() {
    }

    /** Runs {@code command} and exits the JVM with its status. */
    static void exit(String name, IntSupplier command) {
        int status = run(name, command, System.err, "1".equals(System.getenv(TRACES_VARIABLE)));
        System.out.flush();
        System.exit(status);
    }

    /** {@code command}'s status; an escaped failure is one line on {@code err} and status 1. */
    static int run(String name, IntSupplier command, PrintStream err, boolean traces) {
        try {
            return command.getAsInt();
        } catch (RuntimeException | Error e) {
            err.println();
            err.println("lmcache4j " + name + ": failed: " + CliText.oneLine(e)
                    + (traces ? "" : " (" + TRACES_VARIABLE + "=1 prints the stack trace)"));
            if (traces) {
                e.printStackTrace(err);
            }
            return 1;
        }
    }

    /**
     * A bad argument: one line naming the command and the problem, with where to find the options;
     * returns the exit status of a usage error, 2.
     *
     * @param command as typed after {@code ./lmcache4j}: {@code demo}, {@code bench hash}, ...
     */
    static int usageError(PrintStream err, String command, String problem) {
        err.println("lmcache4j " + command + ": " + CliText.escape(problem) + " (./lmcache4j " + command
                + " --help lists the options)");
        return 2;
    }

    /**
     * A run that failed: one line naming the command, what failed and why (with the machine's
     * memory when it ran out); returns exit status 1.
     */
    static int failure(PrintStream err, String command, String what, Throwable e) {
        err.println("lmcache4j " + command + ": " + what + ": " + CliText.oneLine(e) + (outOfMemory(e) ? MachineMemory.note() : ""));
        return 1;
    }

    /** Whether {@code e} (or a cause) is the machine or the JVM running out of memory. */
    static boolean outOfMemory(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof OutOfMemoryError || (t.getMessage() != null
                    && (t.getMessage().contains("ENOMEM") || t.getMessage().contains("Cannot allocate memory")))) {
                return true;
            }
        }
        return false;
    }
}
