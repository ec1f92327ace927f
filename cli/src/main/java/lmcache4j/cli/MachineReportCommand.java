package lmcache4j.cli;

/** {@code ./lmcache4j report}: prints {@link MachineReport}. */
public final class MachineReportCommand {
    private MachineReportCommand() {
    }

    public static void main(String[] args) {
        CliMain.exit("report", () -> run(args, System.out, System.err));
    }

    /** Prints the report; returns the exit status (2 for any argument: it takes none). */
    static int run(String[] args, java.io.PrintStream out, java.io.PrintStream err) {
        if (args.length > 0) {
            err.println("lmcache4j report: takes no arguments, got '" + CliText.echo(String.join(" ", args)) + "'");
            return 2;
        }
        MachineReport.print(out);
        return 0;
    }
}
