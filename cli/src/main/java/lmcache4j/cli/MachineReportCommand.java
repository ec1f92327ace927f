package lmcache4j.cli;

/** {@code ./lmcache4j report}: prints {@link MachineReport}. */
public final class MachineReportCommand {
    static final String USAGE = """
            usage: ./lmcache4j report
            Prints what this machine offers lmcache4j: the JDK, the CUDA runtime, NUMA nodes, hugepages and
            the memlock limit. Takes no arguments.
            """;

    private MachineReportCommand() {
    }

    public static void main(String[] args) {
        CliMain.exit("report", () -> run(args, System.out, System.err));
    }

    /** Prints the report; returns the exit status (2 for any argument: it takes none). */
    static int run(String[] args, java.io.PrintStream out, java.io.PrintStream err) {
        if (args.length == 1 && (args[0].equals("-h") || args[0].equals("--help"))) {
            out.print(USAGE);
            return 0;
        }
        if (args.length > 0) {
            err.println("lmcache4j report: takes no arguments, got '" + CliText.echo(String.join(" ", args)) + "'");
            return 2;
        }
        MachineReport.print(out);
        return 0;
    }
}
