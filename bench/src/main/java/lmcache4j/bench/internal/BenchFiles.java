package lmcache4j.bench.internal;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;

/** The files a benchmark writes for one run and removes after it. */
public final class BenchFiles {
    private BenchFiles() {
    }

    /** Removes {@code root} and everything under it; best effort (it lies under a temporary directory). */
    public static void deleteTree(Path root) {
        try (var walk = Files.walk(root)) {
            for (Path p : walk.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        } catch (IOException e) {
            // what is left lies under the temporary directory
        }
    }
}
