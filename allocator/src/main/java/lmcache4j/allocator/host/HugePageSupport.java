package lmcache4j.allocator.host;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

/**
 * What the kernel offers for huge pages: transparent hugepages (the mode that decides whether
 * {@code madvise(MADV_HUGEPAGE)} has any effect) and the reserved hugetlbfs pools per page size.
 *
 * @param transparentMode  THP mode from {@code /sys/kernel/mm/transparent_hugepage/enabled}:
 *                         {@code always}, {@code madvise}, {@code never}, or {@code unavailable}
 * @param pools            the reserved pools, one per huge page size
 */
public record HugePageSupport(String transparentMode, List<Pool> pools) {
    private static final Path THP_ENABLED = Path.of("/sys/kernel/mm/transparent_hugepage/enabled");
    private static final Path HUGETLB_POOLS = Path.of("/sys/kernel/mm/hugepages");

    /**
     * A hugetlbfs pool.
     *
     * @param pageSize bytes per page
     * @param total    pages reserved
     * @param free     pages not in use
     */
    public record Pool(long pageSize, long total, long free) {
    }

    public HugePageSupport {
        pools = List.copyOf(pools);
    }

    /** The huge page support of this machine. */
    public static HugePageSupport read() {
        return read(THP_ENABLED, HUGETLB_POOLS);
    }

    static HugePageSupport read(Path thpEnabled, Path poolsDir) {
        String mode = "unavailable";
        try {
            if (Files.isReadable(thpEnabled)) {
                mode = selectedMode(Files.readString(thpEnabled));
            }
        } catch (IOException e) {
            mode = "unreadable (" + e.getMessage() + ")";
        }
        List<Pool> pools = new ArrayList<>();
        if (Files.isDirectory(poolsDir)) {
            try (Stream<Path> dirs = Files.list(poolsDir)) {
                for (Path dir : dirs.sorted().toList()) {
                    String name = dir.getFileName().toString(); // hugepages-2048kB
                    if (name.startsWith("hugepages-") && name.endsWith("kB")) {
                        long kb = Long.parseLong(name.substring("hugepages-".length(), name.length() - 2));
                        pools.add(new Pool(kb * 1024, readLong(dir.resolve("nr_hugepages")), readLong(dir.resolve("free_hugepages"))));
                    }
                }
            } catch (IOException | NumberFormatException e) {
                // An unreadable pool directory means no usable pool: report none rather than fail.
                pools.clear();
            }
        }
        return new HugePageSupport(mode, pools);
    }

    /** Whether {@code madvise(MADV_HUGEPAGE)} can give an anonymous mapping 2 MiB pages. */
    public boolean transparentHugePagesOnAdvice() {
        return transparentMode.equals("always") || transparentMode.equals("madvise");
    }

    /** The bracketed word of a sysfs choice file: {@code "always [madvise] never"} gives {@code madvise}. */
    static String selectedMode(String choices) {
        int open = choices.indexOf('[');
        int close = choices.indexOf(']', open + 1);
        return open >= 0 && close > open ? choices.substring(open + 1, close) : choices.strip();
    }

    private static long readLong(Path file) throws IOException {
        return Files.isReadable(file) ? Long.parseLong(Files.readString(file).strip()) : 0;
    }
}
