package lmcache4j.cli;

import java.io.PrintStream;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/** {@code ./lmcache4j report}: prints {@link MachineReport}. */
@Command(name = "report", description = {"Prints what this machine offers lmcache4j: the JDK, the CUDA runtime, NUMA nodes, "
        + "hugepages and the memlock limit. Takes no arguments."})
public final class MachineReportCommand implements CliMain.Command {
    private final PrintStream out;

    private MachineReportCommand(PrintStream out) {
        this.out = out;
    }

    public static void main(String[] args) {
        CliMain.exit("report", () -> run(args, System.out, System.err));
    }

    /** Prints the report; returns the exit status (2 for any argument: it takes none). */
    static int run(String[] args, PrintStream out, PrintStream err) {
        return CliMain.execute(new CommandLine(new MachineReportCommand(out)), out, err, args);
    }

    @Override
    public String unmatched(String arg) {
        return arg.startsWith("-") ? CliMain.Command.super.unmatched(arg) : "takes no arguments, got '" + CliText.echo(arg) + "'";
    }

    @Override
    public Integer call() {
        MachineReport.print(out);
        return 0;
    }
}
