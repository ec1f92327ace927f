package lmcache4j.bench.cli;

/**
 * {@code ./lmcache4j demo}: lmcache4j's main job. Until the engine lands it reports what this
 * machine offers lmcache4j; the end-to-end store/retrieve workload replaces this body then.
 */
public final class DemoCommand {
    private DemoCommand() {
    }

    public static void main(String[] args) {
        if (args.length > 0) {
            System.err.println("usage: ./lmcache4j demo   (takes no arguments yet; got " + String.join(" ", args) + ")");
            System.exit(2);
        }
        System.out.println("lmcache4j demo: the engine is not built yet, so the demo reports what this machine offers it.");
        MachineReport.print(System.out);
    }
}
