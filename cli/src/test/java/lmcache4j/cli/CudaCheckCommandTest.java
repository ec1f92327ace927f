package lmcache4j.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

import lmcache4j.cuda.CudaRuntime;
import org.junit.jupiter.api.Test;

/**
 * {@code cuda-check} against the machine's real libcudart. Without a driver (the development and
 * CI machines) it says why in one line and exits 3; on a GPU machine every step must pass (exit 0).
 */
class CudaCheckCommandTest {
    private record Run(int exit, String out, String err) {
    }

    private static Run run(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int exit = CudaCheckCommand.run(args, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Run(exit, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    @Test
    void withoutADeviceItSaysWhyAndExitsThree() {
        CudaRuntime cuda = CudaRuntime.load();
        Run lines = run("--tokens", "256", "--runs", "1");
        Run json = run("--json", "--tokens", "256", "--runs", "1");
        if (cuda.isAvailable()) {
            assertEquals(0, lines.exit(), lines.out() + lines.err());
            assertTrue(lines.out().matches("(?s).*cuda-check: all \\d+ steps passed.*"), lines.out());
            assertTrue(json.out().contains("\"passed\": true") && json.out().contains("\"wrong_tokens\": 0"), json.out());
            return;
        }
        assertEquals(CudaCheckCommand.NO_DEVICE, lines.exit());
        assertEquals("cuda-check: no usable CUDA device: " + cuda.status() + "\n", lines.out());
        assertTrue(lines.out().contains("cudaErrorInsufficientDriver") || !cuda.isLoaded(), lines.out());
        assertEquals(CudaCheckCommand.NO_DEVICE, json.exit());
        assertEquals("{\"status\": \"" + cuda.status() + "\", \"available\": false, \"passed\": false, \"steps\": []}\n",
                json.out());
    }
}
