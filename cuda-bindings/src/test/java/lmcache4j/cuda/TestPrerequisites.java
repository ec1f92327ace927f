package lmcache4j.cuda;

import static org.junit.jupiter.api.Assertions.fail;

import java.util.Map;

import org.junit.jupiter.api.Assumptions;

/**
 * What a test needs from the machine and cannot make itself (the system assembler, for example). On
 * a developer's machine a missing one skips the test, saying why; in CI ({@code CI} set, as CI
 * systems do) it fails the test: there the suite is never skipped silently, and a runner that lacks
 * the prerequisite must be fixed, not ignored. The same rule as the engine's
 * {@code TestPrerequisites}, which this module cannot use: it does not depend on the engine.
 */
public final class TestPrerequisites {
    private TestPrerequisites() {
    }

    /** Returns when {@code present}; otherwise skips the test, or fails it in CI. */
    public static void require(boolean present, String what) {
        require(present, what, System.getenv());
    }

    static void require(boolean present, String what, Map<String, String> environment) {
        if (present) {
            return;
        }
        if (inCi(environment)) {
            fail("missing test prerequisite in CI (CI=" + environment.get("CI") + "), where tests never skip: " + what);
        }
        System.err.println("SKIPPED for a missing prerequisite (in CI this fails): " + what);
        Assumptions.abort(what);
    }

    /** {@code CI} is set to anything but empty, {@code false} or {@code 0}. */
    static boolean inCi(Map<String, String> environment) {
        String ci = environment.get("CI");
        return ci != null && !ci.isBlank() && !ci.equalsIgnoreCase("false") && !ci.equals("0");
    }
}
