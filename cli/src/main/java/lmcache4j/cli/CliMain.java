package lmcache4j.cli;

import java.io.PrintStream;
import java.io.PrintWriter;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.function.IntSupplier;

import lmcache4j.server.net.AddressInUseException;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;
import picocli.CommandLine.MissingParameterException;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.UnmatchedArgumentException;

/**
 * How every command parses its arguments and how its {@code main} ends. The options and the help
 * text are picocli annotations on the command ({@link #execute}); a bad argument is one line on
 * stderr and exit status 2 ({@link #usageError}); a failure that escapes the command is one line on
 * stderr and status 1 instead of a stack trace (set {@value #TRACES_VARIABLE}=1 to see the trace as
 * well).
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
            return failed(name, e, err, traces);
        }
    }

    private static int failed(String name, Throwable e, PrintStream err, boolean traces) {
        err.println();
        err.println("lmcache4j " + name + ": failed: " + CliText.oneLine(e)
                + (traces ? "" : " (" + TRACES_VARIABLE + "=1 prints the stack trace)"));
        if (traces) {
            e.printStackTrace(err);
        }
        return 1;
    }

    /**
     * A command picocli runs: its {@code @Option}s are set from the arguments, then {@link #call}
     * returns the exit status. An option's setter (or {@code call}) refuses a value by throwing an
     * {@link IllegalArgumentException} (or a {@link ParameterException}) whose message is the problem.
     */
    interface Command extends Callable<Integer> {
        /** The problem an argument that is no option of this command is. */
        default String unmatched(String arg) {
            return (arg.startsWith("-") ? "unknown option '" : "unexpected argument '") + CliText.echo(arg) + "'";
        }

        /** The problem an option given without its value is. */
        default String missingValue(String option) {
            return option + " needs a value";
        }
    }

    /**
     * Parses {@code args} into {@code command} (built with its subcommands, if any) and runs it:
     * {@code -h}/{@code --help} prints the help from its annotations to {@code out} (status 0); a bad
     * argument is one {@link #usageError} line (status 2).
     */
    static int execute(CommandLine command, PrintStream out, PrintStream err, String... args) {
        boolean traces = "1".equals(System.getenv(TRACES_VARIABLE));
        command.setOut(new PrintWriter(out, true)).setErr(new PrintWriter(err, true))
                .setExpandAtFiles(false) // an argument starting with @ is a value, not a file of arguments
                .setOverwrittenOptionsAllowed(true) // the last of a repeated option wins
                .setParameterExceptionHandler((e, a) -> usageError(err, name(e.getCommandLine()), problem(e)))
                .setExecutionExceptionHandler((e, cl, parsed) -> failed(name(cl), e, err, traces));
        decorate(command);
        int status = command.execute(args);
        out.flush();
        return status;
    }

    /** The help layout every command shares: options in declared order, then {@code -h, --help} and {@code -V, --version}. */
    private static void decorate(CommandLine command) {
        CommandSpec spec = command.getCommandSpec();
        spec.usageMessage().synopsisHeading("usage: ./lmcache4j ").sortOptions(false).width(100)
                .commandListHeading("%nbenchmarks:%n");
        if (spec.optionsMap().get("--help") == null) {
            spec.addOption(OptionSpec.builder("-h", "--help").usageHelp(true).description("print this help and exit").build());
        }
        if (spec.optionsMap().get("--version") == null) {
            spec.version("lmcache4j " + spec.qualifiedName() + " " + version());
            spec.addOption(OptionSpec.builder("-V", "--version").versionHelp(true)
                    .description("print lmcache4j's version and exit").build());
        }
        command.getSubcommands().values().forEach(CliMain::decorate);
    }

    /** lmcache4j's version: the cli module's, which the build sets from the project's (the launcher's --version reads the pom). */
    static String version() {
        return CliMain.class.getModule().getDescriptor() == null ? "(not run as a module)"
                : CliMain.class.getModule().getDescriptor().rawVersion().orElse("(no version recorded in the module)");
    }

    /** {@code demo}, {@code bench hash}: the command as typed after {@code ./lmcache4j}. */
    private static String name(CommandLine command) {
        return command.getCommandSpec().qualifiedName();
    }

    /** What was wrong with the arguments, in lmcache4j's words. */
    private static String problem(ParameterException e) {
        Object user = e.getCommandLine().getCommandSpec().userObject();
        Command command = user instanceof Command c ? c : new Command() {
            @Override
            public Integer call() {
                return 0;
            }
        };
        if (e instanceof UnmatchedArgumentException u && !u.getUnmatched().isEmpty()) {
            return command.unmatched(u.getUnmatched().getFirst());
        }
        if (e instanceof MissingParameterException m && !m.getMissing().isEmpty() && m.getMissing().getFirst() instanceof OptionSpec o) {
            return command.missingValue(o.longestName());
        }
        if (e.getArgSpec() instanceof OptionSpec o && o.arity().max() == 0 && e.getValue() != null) {
            return o.longestName() + " takes no value, got '" + CliText.echo(o.longestName() + "=" + e.getValue()) + "'";
        }
        for (Throwable t = e.getCause(); t != null; t = t.getCause()) {
            if (t instanceof IllegalArgumentException) {
                return t.getMessage();
            }
        }
        return e.getMessage();
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

    /**
     * A server that could not start: as {@link #failure}, except that an address in use is said as
     * {@code address H:P already in use (--option)}, naming the option that moves that socket
     * ({@code optionOfSocket}: the server's socket name to the command's option).
     */
    static int startFailure(PrintStream err, String command, Throwable e, Map<String, String> optionOfSocket) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof AddressInUseException inUse) {
                err.println("lmcache4j " + command + ": cannot start: " + CliText.escape(inUse.getMessage()) + " ("
                        + optionOfSocket.getOrDefault(inUse.socket(), inUse.socket()) + ")");
                return 1;
            }
        }
        return failure(err, command, "cannot start", e);
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
