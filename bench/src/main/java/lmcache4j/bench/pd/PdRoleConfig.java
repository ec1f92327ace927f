package lmcache4j.bench.pd;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.Consumer;

import lmcache4j.engine.config.ConfigLoader;
import lmcache4j.engine.config.ConfigSource;
import lmcache4j.engine.config.LMCacheEngineConfig;
import lmcache4j.engine.config.PdSettings;

/**
 * A PD role's engine config: what the user gave (a file, {@code LMCACHE_*} variables, {@code --set}),
 * with what the role implies filled in where the user left it unset: {@code enable_pd} and
 * {@code pd_role} from the role, {@code pd_buffer_device: cpu}, a {@code pd_buffer_size} of
 * {@value #DEFAULT_BUFFER_BYTES} bytes, a decoder's {@code pd_peer_host} (the host it serves on) and
 * ports ({@code [0]}: any free one, which its {@code /status} tells the proxy), and {@code hash_seed}
 * {@code 0}: prefiller and decoder must cut the same keys, which a random seed per process never does.
 * Each value filled in is told to {@code notes}.
 */
public final class PdRoleConfig {
    /** The PD buffer a role gets unless {@code pd_buffer_size} is set: 1 GiB, LMCache's example. */
    public static final long DEFAULT_BUFFER_BYTES = 1L << 30;

    private PdRoleConfig() {
    }

    /** Builds {@code role}'s config over {@code user}; {@code host} is where the role serves. */
    public static LMCacheEngineConfig build(JlamaPdWorker.Role role, ConfigLoader.Builder user, String host,
                                            Consumer<String> notes) {
        LMCacheEngineConfig given = user.build();
        List<String> filled = new ArrayList<>();
        if (role == JlamaPdWorker.Role.COLOCATED) {
            if (given.enablePd()) {
                throw new IllegalArgumentException("a colocated worker does both prefill and decode: leave enable_pd unset");
            }
            unsetSeed(given, user, filled);
            notes(filled, notes);
            return user.build();
        }
        String pdRole = role.pdRole().orElseThrow().configName();
        if (given.enablePd() && given.pdRole().isPresent() && !given.pdRole().get().equals(pdRole)) {
            throw new IllegalArgumentException("--role " + role.label() + " runs with pd_role: " + pdRole + ", the config says "
                    + "pd_role: " + given.pdRole().get());
        }
        fill(given, user, "enable_pd", true, filled);
        fill(given, user, "pd_role", pdRole, filled);
        fill(given, user, "pd_buffer_device", "cpu", filled);
        fill(given, user, "pd_buffer_size", (double) DEFAULT_BUFFER_BYTES, filled);
        if (role == JlamaPdWorker.Role.DECODER) {
            fill(given, user, "pd_peer_host", host, filled);
            fill(given, user, "pd_peer_init_port", List.of(0), filled);
            fill(given, user, "pd_peer_alloc_port", List.of(0), filled);
        }
        unsetSeed(given, user, filled);
        notes(filled, notes);
        LMCacheEngineConfig config = user.build();
        // Every missing piece (the token, a prefiller's proxy) is named now, before the model loads.
        Optional<PdSettings> pd = config.pd();
        if (role == JlamaPdWorker.Role.PREFILLER && pd.flatMap(PdSettings::proxyHost).isEmpty()) {
            throw new IllegalArgumentException(JlamaPdWorker.NEEDS_PROXY);
        }
        return config;
    }

    private static void fill(LMCacheEngineConfig given, ConfigLoader.Builder user, String key, Object value,
                             List<String> filled) {
        if (given.source(key) instanceof ConfigSource.Default) {
            user.set(key, value);
            filled.add(key + "=" + (value instanceof Double d ? String.valueOf(d.longValue()) : value));
        }
    }

    private static void unsetSeed(LMCacheEngineConfig given, ConfigLoader.Builder user, List<String> filled) {
        if (given.hashSeed().isEmpty() && System.getenv("PYTHONHASHSEED") == null) {
            user.set("hash_seed", "0");
            filled.add("hash_seed=0 (prefiller and decoder must hash alike)");
        }
    }

    private static void notes(List<String> filled, Consumer<String> notes) {
        if (!filled.isEmpty()) {
            notes.accept("unset in the config, so filled in: " + String.join(", ", filled));
        }
    }
}
