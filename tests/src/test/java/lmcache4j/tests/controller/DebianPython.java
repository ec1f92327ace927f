package lmcache4j.tests.controller;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import lmcache4j.tests.TestPrerequisites;

/**
 * Debian's {@code /usr/bin/python3} with python3-zmq and python3-msgpack, which the controller tests'
 * Python side (tests/python/) runs on. Always this interpreter, never the first {@code python3} on
 * the PATH: a pyenv or venv Python there has neither package. {@code ./lmcache4j test} installs
 * both packages (TEST_DEBIAN_PACKAGES in the launcher).
 */
final class DebianPython {
    static final Path PYTHON = Path.of("/usr/bin/python3");
    /** tests/python/ of this checkout (surefire runs with the module's directory as working directory). */
    static final Path SCRIPTS = Path.of("python").toAbsolutePath().normalize();
    static final Path GOLDEN = Path.of("..", "engine", "src", "test", "resources", "golden", "controller",
            "controller-messages.json").toAbsolutePath().normalize();

    private static volatile Boolean usable;

    private DebianPython() {
    }

    /** Skips the test (fails it in CI) unless {@code /usr/bin/python3 -c "import zmq, msgpack"} works. */
    static void require() {
        TestPrerequisites.require(usable(), "Debian's /usr/bin/python3 with python3-zmq and python3-msgpack "
                + "(apt-get install python3-zmq python3-msgpack; ./lmcache4j test installs them)");
    }

    /** The command line running {@code tests/python/<script>} with {@code args}. */
    static List<String> script(String script, List<String> args) {
        List<String> cmd = new java.util.ArrayList<>(List.of(PYTHON.toString(), "-u", SCRIPTS.resolve(script).toString()));
        cmd.addAll(args);
        return cmd;
    }

    private static boolean usable() {
        Boolean u = usable;
        if (u == null) {
            u = Files.isExecutable(PYTHON) && imports();
            usable = u;
        }
        return u;
    }

    private static boolean imports() {
        try {
            Process p = new ProcessBuilder(PYTHON.toString(), "-c", "import zmq, msgpack").redirectErrorStream(true).start();
            p.getInputStream().readAllBytes();
            return p.waitFor(30, TimeUnit.SECONDS) && p.exitValue() == 0;
        } catch (IOException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }
}
