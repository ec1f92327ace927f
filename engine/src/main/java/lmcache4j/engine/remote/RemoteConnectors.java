package lmcache4j.engine.remote;

import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.util.Locale;
import java.util.Optional;
import java.util.ServiceLoader;

import lmcache4j.allocator.MemoryFormat;
import lmcache4j.allocator.TensorShape;
import lmcache4j.engine.ModelMetadata;
import lmcache4j.engine.config.LMCacheEngineConfig;
import lmcache4j.engine.config.RemoteTierSettings;
import lmcache4j.engine.remote.fs.FsConnector;
import lmcache4j.engine.remote.redis.RedisLayout;

/** Makes the connector a {@code remote_url} names, by scheme (LMCache spec §4.4). */
public final class RemoteConnectors {
    private RemoteConnectors() {
    }

    /**
     * The connector for {@code url}: {@code blackhole://}, {@code fs://[host:port]/path[,path]} or
     * {@code lm://host:port[?token=T]} (lmcache4j's or LMCache's cache server), or
     * {@code redis://[user:pass@]host:port[/db]} / {@code rediss://...} (TLS) /
     * {@code redis-sentinel://host:port[,host:port][/db][?service_name=NAME]} /
     * {@code redis-cluster://host:port[,host:port]}.
     *
     * @throws BadRemoteUrlException      for a malformed URL or a scheme lmcache4j does not serve yet
     * @throws RemoteUnavailableException when the store cannot be opened
     */
    public static RemoteConnector create(String url) {
        return create(url, RedisLayout.single());
    }

    /**
     * As {@link #create(String)}; a scheme the engine has no client for ({@code s3://}) is opened by
     * the {@link RemoteConnectorProvider} that serves it, told {@code settings}.
     *
     * @throws BadRemoteUrlException as {@link #create(String)}, and for a scheme whose module is not on
     *                               the module path (naming it)
     */
    public static RemoteConnector create(String url, RemoteConnectorSettings settings) {
        return create(url, RedisLayout.single(), settings);
    }

    /**
     * The connector of {@code config}'s {@code remote_url}, opened as the engine opens its remote
     * tier: Redis in {@code extra_config.redis_layout}, a provider's scheme told the config's
     * {@code extra_config} and the size and shape of {@code model}'s full chunk.
     *
     * @throws IllegalArgumentException when the config names no {@code remote_url}
     * @throws BadRemoteUrlException    as {@link #create(String, RemoteConnectorSettings)}, and for the split
     *                                  layout with a scheme other than Redis's
     */
    public static RemoteConnector create(LMCacheEngineConfig config, ModelMetadata model) {
        RemoteTierSettings remote = config.remoteTier().orElseThrow(() -> new IllegalArgumentException(
                "the config names no remote_url (lm://, redis://, fs://, s3:// ...)"));
        return create(remote.url(), RedisLayout.of(remote.redisLayout(), remote.redisSplitPartMb(), remote.redisSplitConnections()),
                new RemoteConnectorSettings(config.extraConfig(), fullChunk(model, config.chunkSize())));
    }

    /** As {@link #create(String)}, with the layout a Redis URL stores chunks in (this package's tests). */
    static RemoteConnector create(String url, RedisLayout redisLayout) {
        return create(url, redisLayout, RemoteConnectorSettings.none());
    }

    /**
     * The header of one full chunk of {@code model}: what a store without LMCache's header (S3) holds
     * per chunk; empty when LMCache's header cannot describe it (over 2 GiB, or a dtype it has no code for).
     */
    private static Optional<RemoteMetadata> fullChunk(ModelMetadata model, int chunkSize) {
        long bytes = model.chunkBytes(chunkSize);
        if (bytes > Integer.MAX_VALUE || !model.kvDtype().hasMetadataCode()) {
            return Optional.empty();
        }
        TensorShape shape = TensorShape.of(model.mla() ? 1 : 2, model.numLayers(), chunkSize, model.numKvHeads() * model.headSize());
        return Optional.of(new RemoteMetadata((int) bytes, model.mla() ? MemoryFormat.KV_MLA_FMT : MemoryFormat.KV_2LTD,
                Optional.of(model.kvDtype()), shape));
    }

    /**
     * Any layout but LMCache's single-value one needs a Redis URL; a scheme the engine has no client
     * for is opened by its provider, told {@code settings}.
     */
    private static RemoteConnector create(String url, RedisLayout redisLayout, RemoteConnectorSettings settings) {
        int colon = url.indexOf("://");
        if (colon <= 0) {
            throw new BadRemoteUrlException("remote_url has no scheme:// (for example lm://host:port, redis://host:port "
                    + "or fs:///shared/dir)", null);
        }
        String scheme = url.substring(0, colon).toLowerCase(Locale.ROOT);
        if (!(redisLayout instanceof RedisLayout.Single) && !scheme.startsWith("redis")) {
            throw new BadRemoteUrlException("extra_config.redis_layout " + redisLayout.name() + " needs a redis://, rediss://, "
                    + "redis-sentinel:// or redis-cluster:// remote_url, not " + scheme + "://", null);
        }
        try {
            return switch (scheme) {
                case "blackhole" -> new BlackholeConnector(url);
                case "fs" -> FsConnector.open(url);
                case "lm" -> lmcache4j.engine.remote.lm.LmConnector.connect(uri(url));
                case "redis", "rediss", "redis-sentinel", "redis-cluster" ->
                        lmcache4j.engine.remote.redis.RedisConnector.connect(uri(url), redisLayout);
                default -> provided(scheme, url, settings);
            };
        } catch (BadRemoteUrlException e) {
            throw e;
        } catch (IllegalArgumentException e) { // the connectors name what is wrong, without credentials
            throw new BadRemoteUrlException(e.getMessage(), e);
        } catch (IOException e) {
            throw new RemoteUnavailableException("cannot open remote store " + url + ": " + e.getMessage(), e);
        }
    }

    /** The connector of the provider that serves {@code scheme}: {@code s3://} from module lmcache4j.s3. */
    private static RemoteConnector provided(String scheme, String url, RemoteConnectorSettings settings) throws IOException {
        for (RemoteConnectorProvider p : ServiceLoader.load(RemoteConnectorProvider.class, RemoteConnectors.class.getClassLoader())) {
            if (p.schemes().contains(scheme)) {
                return p.open(url, settings);
            }
        }
        if (scheme.equals("s3")) {
            throw new BadRemoteUrlException("remote_url s3:// needs the module lmcache4j.s3 (artifact lmcache4j-s3, with "
                    + "the AWS SDK) on the module path; ./lmcache4j puts it there", null);
        }
        throw new BadRemoteUrlException("remote_url scheme '" + scheme + "://' is not served by this build of lmcache4j; "
                + "available: blackhole://, fs://, lm://, redis://, rediss://, redis-sentinel://, redis-cluster://, "
                + "s3:// (module lmcache4j.s3)", null);
    }

    /** {@code url} as a URI; a syntax error names the position, not the URL (it may hold a password). */
    private static URI uri(String url) {
        try {
            return new URI(url);
        } catch (URISyntaxException e) {
            throw new BadRemoteUrlException("remote_url is not a valid URL: " + e.getReason() + " at character "
                    + (e.getIndex() + 1), e);
        }
    }
}
