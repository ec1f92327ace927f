package lmcache4j.bench.demo;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

import lmcache4j.allocator.host.HostArenas;

/**
 * What a demo run's result means: PASS, or every reason it failed, each said as what happened
 * (bytes that differ from the model are not the same failure as a retrieve that loaded fewer
 * tokens than its lookup promised, nor as a remote store that never worked), and the exit status
 * of the most serious.
 *
 * @param outcome the most serious outcome
 * @param reasons one sentence per failure, most serious first; empty for PASS
 */
public record DemoVerdict(Outcome outcome, List<String> reasons) {

    /** Outcomes, least serious first, with their exit status. */
    public enum Outcome {
        PASS(0),
        /** {@code --controller} was given and the controller never acknowledged the engine's registration. */
        CONTROLLER_UNREACHABLE(4),
        /** {@code --remote} was given and the remote tier stored nothing, or never answered. */
        REMOTE_STORED_NOTHING(3),
        /** The engine failed a check of its own (allocator invariants) or returned a mask with a hole. */
        ENGINE_PROBLEM(1),
        /** Retrieves loaded fewer tokens than their pinned lookups found; the bytes loaded were right. */
        SHORTFALL(1),
        /** Retrieved bytes differ from the model: the engine returned wrong KV. */
        WRONG_KV(1);

        private final int exitStatus;

        Outcome(int exitStatus) {
            this.exitStatus = exitStatus;
        }

        public int exitStatus() {
            return exitStatus;
        }
    }

    public DemoVerdict {
        reasons = List.copyOf(reasons);
    }

    /** The exit status of {@code ./lmcache4j demo} for this verdict. */
    public int exitStatus() {
        return outcome.exitStatus();
    }

    public boolean passed() {
        return outcome == Outcome.PASS;
    }

    /**
     * The verdict of a run.
     *
     * @param verifiedBytes    retrieved bytes checked against the model
     * @param mismatchingBytes those that differed
     * @param shortfalls       retrieves that loaded fewer tokens than their pinned lookup found
     * @param shortfallTokens  the tokens they fell short by, in all
     * @param maskHoles        retrieves whose mask had a loaded token after an unloaded one
     * @param engineHealthy    whether the engine's own health check (allocator invariants) passed at the end
     * @param remote           the remote tier's report, or null without {@code --remote}
     */
    public static DemoVerdict of(long verifiedBytes, long mismatchingBytes, int shortfalls, long shortfallTokens,
                                 int maskHoles, boolean engineHealthy, DemoReport.Remote remote) {
        return of(verifiedBytes, mismatchingBytes, shortfalls, shortfallTokens, maskHoles, engineHealthy, remote, null);
    }

    /**
     * As {@link #of(long, long, int, long, int, boolean, DemoReport.Remote)}, with the cache controller's report.
     *
     * @param controller the controller link's report, or null without {@code --controller}
     */
    public static DemoVerdict of(long verifiedBytes, long mismatchingBytes, int shortfalls, long shortfallTokens,
                                 int maskHoles, boolean engineHealthy, DemoReport.Remote remote,
                                 DemoReport.Controller controller) {
        Outcome worst = Outcome.PASS;
        List<String> reasons = new ArrayList<>();
        if (mismatchingBytes != 0) {
            worst = Outcome.WRONG_KV;
            reasons.add(String.format(Locale.ROOT, "%,d of the %,d retrieved bytes differ from the model: the engine "
                    + "returned wrong KV", mismatchingBytes, verifiedBytes));
        }
        if (shortfalls != 0) {
            worst = max(worst, Outcome.SHORTFALL);
            reasons.add(String.format(Locale.ROOT, "%,d retrieves loaded fewer tokens than their pinned lookup promised "
                    + "(%,d tokens short in all)%s", shortfalls, shortfallTokens,
                    mismatchingBytes == 0 ? ", though every byte they loaded matched the model" : ""));
        }
        if (maskHoles != 0) {
            worst = max(worst, Outcome.ENGINE_PROBLEM);
            reasons.add(String.format(Locale.ROOT, "%,d retrieves returned a mask with a hole (a token loaded after one "
                    + "that was not)", maskHoles));
        }
        if (!engineHealthy) {
            worst = max(worst, Outcome.ENGINE_PROBLEM);
            reasons.add("the engine's health check (allocator invariants) failed: see the log");
        }
        if (remote != null && remote.failed()) {
            worst = max(worst, Outcome.REMOTE_STORED_NOTHING);
            reasons.add(remote.failure());
        }
        if (controller != null && !controller.registered()) {
            worst = max(worst, Outcome.CONTROLLER_UNREACHABLE);
            reasons.add(controller.failure());
        }
        return new DemoVerdict(worst, reasons);
    }

    private static Outcome max(Outcome a, Outcome b) {
        return a.compareTo(b) >= 0 ? a : b;
    }

    /** The verdict in one line, as the demo ends with it on stderr (or the PASS line of the report). */
    public String line(long verifiedBytes) {
        if (passed()) {
            return String.format(Locale.ROOT, "PASS: all %s of retrieved KV matched the model byte for byte.",
                    HostArenas.formatBytes(verifiedBytes));
        }
        return "FAIL: " + String.join("; ", reasons);
    }
}
