package lmcache4j.tests;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The Python the tests' Python side (tests/python/) runs on: the virtual environment
 * {@code ./lmcache4j test} creates in {@code .cache/python} from tests/python/requirements.txt
 * (the real msgspec, pyzmq, msgpack, cbor2 and boto3, pinned). The launcher passes its interpreter as
 * {@code -Dlmcache4j.python}; a plain Maven run finds it in the checkout. Never the first
 * {@code python3} on the PATH: that one has none of the pinned packages.
 */
public final class TestPython {
    /** tests/python/ of this checkout (surefire runs with the module's directory as working directory). */
    public static final Path SCRIPTS = Path.of("python").toAbsolutePath().normalize();
    /** The controller messages' golden vectors. */
    public static final Path GOLDEN = Path.of("..", "engine", "src", "test", "resources", "golden", "controller",
            "controller-messages.json").toAbsolutePath().normalize();
    static final Path VENV_PYTHON = Path.of("..", ".cache", "python", "bin", "python").toAbsolutePath().normalize();
    private static final String IMPORTS = "import msgspec, zmq, msgpack, cbor2, boto3";

    private static volatile Boolean usable;

    private TestPython() {
    }

    /** The interpreter: {@code -Dlmcache4j.python} when set, else the checkout's {@code .cache/python}. */
    public static Path interpreter() {
        String configured = System.getProperty("lmcache4j.python", "");
        return configured.isBlank() ? VENV_PYTHON : Path.of(configured);
    }

    /** Skips the test (fails it in CI) unless the interpreter runs and imports the pinned packages. */
    public static void require() {
        TestPrerequisites.require(usable(), "the tests' Python environment " + interpreter() + " with msgspec, pyzmq, "
                + "msgpack, cbor2 and boto3 (./lmcache4j test creates it from tests/python/requirements.txt)");
    }

    /** The command line running {@code tests/python/<script>} with {@code args}. */
    public static List<String> script(String script, List<String> args) {
        List<String> cmd = new ArrayList<>(List.of(interpreter().toString(), "-u", SCRIPTS.resolve(script).toString()));
        cmd.addAll(args);
        return cmd;
    }

    private static boolean usable() {
        Boolean u = usable;
        if (u == null) {
            u = Files.isExecutable(interpreter()) && imports();
            usable = u;
        }
        return u;
    }

    private static boolean imports() {
        try {
            Process p = new ProcessBuilder(interpreter().toString(), "-c", IMPORTS).redirectErrorStream(true).start();
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
