package lmcache4j.bench.cli;

/** {@code ./lmcache4j report}: prints {@link MachineReport}. */
public final class MachineReportCommand {
    private MachineReportCommand() {
    }

    public static void main(String[] args) {
        if (args.length > 0) {
            System.err.println("usage: ./lmcache4j report   (takes no arguments; got " + String.join(" ", args) + ")");
            System.exit(2);
        }
        MachineReport.print(System.out);
    }
}
