package lmcache4j.engine.remote;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Locale;

import lmcache4j.engine.remote.fs.FsConnector;

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
     * @throws IllegalArgumentException for a malformed URL or a scheme lmcache4j does not serve yet
     * @throws UncheckedIOException     when the store cannot be opened
     */
    public static RemoteConnector create(String url) {
        int colon = url.indexOf("://");
        if (colon <= 0) {
            throw new IllegalArgumentException("remote_url '" + url + "' has no scheme://");
        }
        String scheme = url.substring(0, colon).toLowerCase(Locale.ROOT);
        try {
            return switch (scheme) {
                case "blackhole" -> new BlackholeConnector(url);
                case "fs" -> FsConnector.open(url);
                case "lm" -> lmcache4j.engine.remote.lm.LmConnector.connect(java.net.URI.create(url));
                case "redis", "rediss", "redis-sentinel", "redis-cluster" -> lmcache4j.engine.remote.redis.RedisConnector.connect(java.net.URI.create(url));
                default -> throw new IllegalArgumentException("remote_url scheme '" + scheme + "://' is not served by this "
                        + "build of lmcache4j; available: blackhole://, fs://, lm://, redis://, rediss://, redis-sentinel://, redis-cluster://");
            };
        } catch (IOException e) {
            throw new UncheckedIOException("cannot open remote store " + url + ": " + e.getMessage(), e);
        }
    }
}
