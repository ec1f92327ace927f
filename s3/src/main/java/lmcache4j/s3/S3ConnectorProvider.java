package lmcache4j.s3;

import java.io.IOException;
import java.util.Set;

import lmcache4j.engine.remote.RemoteConnector;
import lmcache4j.engine.remote.RemoteConnectorProvider;
import lmcache4j.engine.remote.RemoteConnectorSettings;

/** Opens {@code s3://} remote URLs for the engine ({@link S3Connector}). */
public final class S3ConnectorProvider implements RemoteConnectorProvider {
    @Override
    public Set<String> schemes() {
        return Set.of("s3");
    }

    @Override
    public RemoteConnector open(String url, RemoteConnectorSettings settings) throws IOException {
        return S3Connector.open(url, settings);
    }
}
