package lmcache4j.tests;

import static org.junit.jupiter.api.Assertions.fail;

import java.util.Map;

import org.junit.jupiter.api.Assumptions;

/**
 * What a test of this module needs from the machine and cannot make itself (the tests' Python
 * environment, or redis-server, for example). On a developer's machine a missing one skips the test, saying why; in
 * CI ({@code CI} set) it fails the test. The same rule as the engine's {@code TestPrerequisites},
 * which this module cannot use: test classes of another module are not on its module path.
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
        String ci = environment.get("CI");
        if (ci != null && !ci.isBlank() && !ci.equalsIgnoreCase("false") && !ci.equals("0")) {
            fail("missing test prerequisite in CI (CI=" + ci + "), where tests never skip: " + what);
        }
        System.err.println("SKIPPED for a missing prerequisite (in CI this fails): " + what);
        Assumptions.abort(what);
    }
}
