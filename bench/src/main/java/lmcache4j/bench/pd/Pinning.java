package lmcache4j.bench.pd;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/** Whether processes can be pinned to CPUs here ({@code taskset}), and which CPU this is. */
public final class Pinning {
    private Pinning() {
    }

    /** {@code taskset}'s path when it runs and this machine has two CPUs or more to pin apart; else empty. */
    static Optional<String> available() {
        if (Runtime.getRuntime().availableProcessors() < 2) {
            return Optional.empty();
        }
        try {
            Process p = new ProcessBuilder("taskset", "-c", "0", "true").redirectErrorStream(true).start();
            p.getInputStream().readAllBytes();
            if (p.waitFor(10, TimeUnit.SECONDS) && p.exitValue() == 0) {
                return Optional.of("taskset -c");
            }
            return Optional.empty();
        } catch (IOException e) {
            return Optional.empty();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return Optional.empty();
        }
    }

    /** The CPU's model name from {@code /proc/cpuinfo}, or what the JVM knows. */
    public static String cpuModel() {
        try {
            return Files.readAllLines(Path.of("/proc/cpuinfo")).stream().filter(l -> l.startsWith("model name"))
                    .map(l -> l.substring(l.indexOf(':') + 1).strip()).findFirst()
                    .orElse(System.getProperty("os.arch"));
        } catch (IOException | RuntimeException e) {
            return System.getProperty("os.arch");
        }
    }
}
