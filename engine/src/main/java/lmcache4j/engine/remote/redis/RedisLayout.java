package lmcache4j.engine.remote.redis;

import java.util.List;
import java.util.Locale;

/**
 * How a {@link RedisConnector} lays a chunk out in Redis ({@code extra_config.redis_layout}).
 *
 * <ul>
 *   <li>{@link Single} (the default): LMCache's layout, one value per chunk under
 *       {@code <key>kv_bytes} and its header under {@code <key>metadata}; LMCache and lmcache4j read
 *       each other's entries.</li>
 *   <li>{@link Split}: lmcache4j's own, opt-in. A chunk is stored as parts of {@code partBytes}
 *       (1–8 MiB) plus a small manifest written after every part ({@link SplitManifest}); gets fetch
 *       the parts in parallel over {@code connections} connections, and on a Redis Cluster the parts'
 *       keys hash to slots spread evenly over the slot space, so every master serves a share of each
 *       chunk ({@link SplitKeys}). Large values are the slow case for Redis (a 32 MiB GET is several
 *       times slower per byte than 1 MiB ones), which is what this layout avoids. Its keys never
 *       collide with LMCache's, so both layouts can share one Redis; LMCache does not read it.</li>
 * </ul>
 */
public sealed interface RedisLayout {
    /** The smallest part, in MiB. */
    int MIN_PART_MB = 1;
    /** The largest part, in MiB. */
    int MAX_PART_MB = 8;
    /** The default part size of the split layout, in MiB. */
    int DEFAULT_PART_MB = 2; // measured: 2 MiB parts got 2.05 (median) of the single layout on one redis-server, 4 MiB 1.98
    /** The most connections of the split layout. */
    int MAX_CONNECTIONS = 16;
    /** The default number of connections of the split layout. */
    int DEFAULT_CONNECTIONS = 4;
    /** The names {@link #of} accepts. */
    List<String> NAMES = List.of("single", "split");

    /** How many connections the connector keeps. */
    int connections();

    /** The layout's name in {@code extra_config.redis_layout}. */
    String name();

    /** LMCache's layout: one payload value and one metadata value per chunk, over one connection. */
    record Single() implements RedisLayout {
        @Override
        public int connections() {
            return 1;
        }

        @Override
        public String name() {
            return "single";
        }
    }

    /**
     * Chunks as parts of {@code partBytes} plus a manifest, over {@code connections} connections.
     */
    record Split(int partBytes, int connections) implements RedisLayout {
        /**
         * Checks the ranges.
         *
         * @throws IllegalArgumentException when a value is out of range
         */
        public Split {
            if (partBytes < MIN_PART_MB << 20 || partBytes > MAX_PART_MB << 20) {
                throw new IllegalArgumentException("redis split part size must be " + MIN_PART_MB + ".." + MAX_PART_MB
                        + " MiB, was " + partBytes + " bytes");
            }
            if (connections < 1 || connections > MAX_CONNECTIONS) {
                throw new IllegalArgumentException("redis split connections must be 1.." + MAX_CONNECTIONS + ", was "
                        + connections);
            }
        }

        @Override
        public String name() {
            return "split";
        }

        /** The parts a payload of {@code bytes} is cut into. */
        public int partsOf(long bytes) {
            return (int) Math.max(1, (bytes + partBytes - 1) / partBytes);
        }
    }

    /** LMCache's single-value layout. */
    static RedisLayout single() {
        return new Single();
    }

    /** The split layout with parts of {@code partMb} MiB over {@code connections} connections. */
    static RedisLayout split(int partMb, int connections) {
        if (partMb < MIN_PART_MB || partMb > MAX_PART_MB) {
            throw new IllegalArgumentException("redis split part size must be " + MIN_PART_MB + ".." + MAX_PART_MB
                    + " MiB, was " + partMb);
        }
        return new Split(partMb << 20, connections);
    }

    /**
     * The layout called {@code name} ({@code single} or {@code split}); {@code partMb} and
     * {@code connections} apply to {@code split} only.
     *
     * @throws IllegalArgumentException for another name or values out of range
     */
    static RedisLayout of(String name, int partMb, int connections) {
        return switch (name.toLowerCase(Locale.ROOT)) {
            case "single" -> single();
            case "split" -> split(partMb, connections);
            default -> throw new IllegalArgumentException("redis layout must be one of " + NAMES + ", was '" + name + "'");
        };
    }
}
