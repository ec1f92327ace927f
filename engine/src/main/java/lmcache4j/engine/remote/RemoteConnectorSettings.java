package lmcache4j.engine.remote;

import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * What a {@link RemoteConnectorProvider} is told besides the URL.
 *
 * @param extraConfig the engine's {@code extra_config} (the provider reads its own keys, declared in
 *                    {@code lmcache4j.engine.config.ExtraConfigKeys}); never logged: it may hold credentials
 * @param fullChunk   the header of one full chunk of this engine's model, when known: for stores that keep
 *                    a chunk's payload without LMCache's header (LMCache's S3 objects), this is what such
 *                    an object holds
 */
public record RemoteConnectorSettings(Map<String, Object> extraConfig, Optional<RemoteMetadata> fullChunk) {

    public RemoteConnectorSettings {
        extraConfig = java.util.Collections.unmodifiableMap(new java.util.LinkedHashMap<>(Objects.requireNonNull(extraConfig, "extraConfig")));
        Objects.requireNonNull(fullChunk, "fullChunk");
    }

    /** No extra settings and no known chunk shape. */
    public static RemoteConnectorSettings none() {
        return new RemoteConnectorSettings(Map.of(), Optional.empty());
    }

    @Override
    public String toString() { // extra_config may hold credentials: never printed
        return "RemoteConnectorSettings[" + extraConfig.size() + " extra_config keys, full chunk "
                + fullChunk.map(RemoteMetadata::toString).orElse("unknown") + "]";
    }
}
