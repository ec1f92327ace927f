package lmcache4j.allocator.host;

import java.util.ArrayList;
import java.util.List;

/** Parses the kernel's CPU-list format ({@code "0-3,8,10-11"}), as found under {@code /sys}. */
final class CpuList {
    private CpuList() {
    }

    static List<Integer> parse(String text) {
        List<Integer> cpus = new ArrayList<>();
        String trimmed = text.strip();
        if (trimmed.isEmpty()) {
            return List.of();
        }
        for (String part : trimmed.split(",")) {
            int dash = part.indexOf('-');
            try {
                if (dash < 0) {
                    cpus.add(Integer.parseInt(part.strip()));
                } else {
                    int from = Integer.parseInt(part.substring(0, dash).strip());
                    int to = Integer.parseInt(part.substring(dash + 1).strip());
                    if (to < from) {
                        throw new IllegalArgumentException("descending range '" + part + "' in CPU list '" + text + "'");
                    }
                    for (int cpu = from; cpu <= to; cpu++) {
                        cpus.add(cpu);
                    }
                }
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("malformed CPU list '" + text + "': '" + part + "' is not a CPU number or range", e);
            }
        }
        return List.copyOf(cpus);
    }
}
