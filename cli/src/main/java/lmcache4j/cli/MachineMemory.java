package lmcache4j.cli;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

import lmcache4j.allocator.host.HostArenas;

/**
 * The machine's memory as {@code /proc/meminfo} tells it: what a command checks a size argument
 * against, and what its messages quote when memory runs out.
 *
 * @param totalBytes     {@code MemTotal}
 * @param availableBytes {@code MemAvailable}: what can be had without swapping
 */
record MachineMemory(long totalBytes, long availableBytes) {
    private static final Path MEMINFO = Path.of("/proc/meminfo");

    /** This machine's memory; empty where {@code /proc/meminfo} cannot be read (not Linux). */
    static Optional<MachineMemory> read() {
        try {
            return parse(Files.readString(MEMINFO));
        } catch (IOException | RuntimeException e) {
            return Optional.empty();
        }
    }

    /** The memory {@code meminfo} text describes; empty without both fields. */
    static Optional<MachineMemory> parse(String meminfo) {
        long total = -1;
        long available = -1;
        for (String line : meminfo.split("\n")) {
            String[] f = line.trim().split("\\s+");
            if (f.length >= 2 && (f[0].equals("MemTotal:") || f[0].equals("MemAvailable:"))) {
                long bytes = Long.parseLong(f[1]) * (f.length > 2 && f[2].equals("kB") ? 1024 : 1);
                if (f[0].equals("MemTotal:")) {
                    total = bytes;
                } else {
                    available = bytes;
                }
            }
        }
        return total < 0 || available < 0 ? Optional.empty() : Optional.of(new MachineMemory(total, available));
    }

    /** {@code 23.4 GiB of memory, 22.9 GiB available}. */
    String describe() {
        return HostArenas.formatBytes(totalBytes) + " of memory, " + HostArenas.formatBytes(availableBytes) + " available";
    }

    /** A sentence about this machine's memory for a failure message, or empty where it is unknown. */
    static String note() {
        return read().map(m -> "; this machine has " + m.describe()).orElse("");
    }
}
