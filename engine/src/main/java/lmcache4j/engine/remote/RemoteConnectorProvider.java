package lmcache4j.engine.remote;

import java.io.IOException;
import java.util.Set;

/**
 * A remote store whose client lives in another module, found by its URL scheme with
 * {@link java.util.ServiceLoader}: how {@link RemoteConnectors} opens {@code s3://} (module
 * {@code lmcache4j.s3}, over the AWS SDK) without the engine carrying that client. A module
 * provides one with {@code provides lmcache4j.engine.remote.RemoteConnectorProvider with ...}.
 */
public interface RemoteConnectorProvider {
    /** The URL schemes it opens, lowercase, without {@code ://} (for example {@code s3}). */
    Set<String> schemes();

    /**
     * Opens the store {@code url} names, checking at once that it can be used (so a missing bucket or
     * refused credentials are an error at start, naming the setting to fix).
     *
     * @throws IllegalArgumentException for a malformed URL or setting (the message names it, without credentials)
     * @throws IOException              when the store cannot be reached or refuses this process
     */
    RemoteConnector open(String url, RemoteConnectorSettings settings) throws IOException;
}
