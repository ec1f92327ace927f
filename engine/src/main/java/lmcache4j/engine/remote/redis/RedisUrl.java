package lmcache4j.engine.remote.redis;

import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;

import io.lettuce.core.RedisURI;
import lmcache4j.engine.remote.RemoteUrls;

/**
 * A {@code redis://}, {@code rediss://}, {@code redis-sentinel://} or {@code redis-cluster://} URL,
 * checked and taken apart (the forms {@link RedisConnector#connect(URI)} documents).
 *
 * @param scheme      the scheme, lower case
 * @param userInfo    {@code user:pass} or {@code pass}, percent-encoded, or null
 * @param hosts       the server, the sentinels or the cluster's seed nodes
 * @param db          the database number (0 for a cluster)
 * @param tlsCaFile   {@code rediss://} only: the CA certificates to trust, or null for the JDK's
 * @param serviceName {@code redis-sentinel://} only: the master's name, else null
 */
record RedisUrl(String scheme, String userInfo, List<Map.Entry<String, Integer>> hosts, int db, Path tlsCaFile,
                String serviceName, boolean checksum, Duration timeout, int maxInflightMb) {

    /** Whether the URL names sentinels. */
    boolean sentinel() {
        return scheme.equals("redis-sentinel");
    }

    /** Whether the URL names a cluster's seed nodes. */
    boolean cluster() {
        return scheme.equals("redis-cluster");
    }

    /** Checks {@code uri}; the exception names what is wrong, with the password redacted. */
    static RedisUrl parse(URI uri) {
        String scheme = uri.getScheme() == null ? "" : uri.getScheme().toLowerCase(Locale.ROOT);
        boolean sentinel = scheme.equals("redis-sentinel");
        boolean cluster = scheme.equals("redis-cluster");
        if (!scheme.equals("redis") && !scheme.equals("rediss") && !sentinel && !cluster) {
            throw new IllegalArgumentException("not a redis://, rediss://, redis-sentinel:// or redis-cluster:// URL: "
                    + RedisConnector.redact(uri));
        }
        Authority authority = authority(uri, scheme);
        String userInfo = authority.userInfo();
        List<Map.Entry<String, Integer>> hosts = authority.hosts();
        int db = database(uri, scheme);
        Map<String, String> q = RemoteUrls.query(uri);
        Path tlsCaFile = null;
        if (q.containsKey("tls_ca_file")) {
            if (!scheme.equals("rediss")) {
                throw new IllegalArgumentException("tls_ca_file needs a rediss:// URL, not " + RedisConnector.redact(uri));
            }
            tlsCaFile = Path.of(q.remove("tls_ca_file"));
            RedisConnector.requireCertificates(tlsCaFile);
        }
        String serviceName = null;
        if (sentinel) {
            // LMCache reads the master's name from REDIS_SERVICE_NAME; the URL may name it instead.
            serviceName = q.containsKey("service_name") ? q.remove("service_name")
                    : Objects.requireNonNullElse(System.getenv("REDIS_SERVICE_NAME"), RedisConnector.DEFAULT_SENTINEL_SERVICE_NAME);
            if (serviceName.isEmpty()) {
                throw new IllegalArgumentException("redis-sentinel:// service_name is empty: " + RedisConnector.redact(uri));
            }
        }
        boolean checksum = true;
        if (q.containsKey("checksum")) {
            String c = q.remove("checksum");
            if (!c.equals("crc32c") && !c.equals("none")) {
                throw new IllegalArgumentException(scheme + ":// checksum must be crc32c or none, was '" + c + "'");
            }
            checksum = c.equals("crc32c");
        }
        Duration timeout = RedisConnector.DEFAULT_TIMEOUT;
        int maxInflightMb = RedisConnector.DEFAULT_MAX_INFLIGHT_MB;
        try {
            if (q.containsKey("timeout_ms")) {
                timeout = Duration.ofMillis(Long.parseLong(q.remove("timeout_ms")));
            }
            if (q.containsKey("max_inflight_mb")) {
                maxInflightMb = Integer.parseInt(q.remove("max_inflight_mb"));
            }
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(scheme + ":// URL has a non-numeric timeout_ms or max_inflight_mb: " + RedisConnector.redact(uri));
        }
        if (!q.isEmpty()) {
            throw new IllegalArgumentException(scheme + ":// URL has unknown parameters " + q.keySet()
                    + " (known: timeout_ms, max_inflight_mb, checksum" + (scheme.equals("rediss") ? ", tls_ca_file"
                    : sentinel ? ", service_name" : "") + ")");
        }
        if (timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException(scheme + ":// timeout_ms must be positive, was " + timeout.toMillis());
        }
        if (maxInflightMb < 1 || maxInflightMb > 2047) {
            throw new IllegalArgumentException(scheme + ":// max_inflight_mb must be in 1..2047, was " + maxInflightMb);
        }
        return new RedisUrl(scheme, userInfo, List.copyOf(hosts), db, tlsCaFile, serviceName, checksum, timeout,
                maxInflightMb);
    }

    /** The URL's credentials and servers. */
    private record Authority(String userInfo, List<Map.Entry<String, Integer>> hosts) {
    }

    private static Authority authority(URI uri, String scheme) {
        boolean sentinel = scheme.equals("redis-sentinel");
        boolean cluster = scheme.equals("redis-cluster");
        String userInfo;
        List<Map.Entry<String, Integer>> hosts = new ArrayList<>();
        if (sentinel || cluster) {
            // h1:p1,h2:p2 is not a server authority to java.net.URI, so it is split here.
            String raw = uri.getRawAuthority() == null ? "" : uri.getRawAuthority();
            int at = raw.lastIndexOf('@');
            userInfo = at < 0 ? null : raw.substring(0, at);
            for (String hp : raw.substring(at + 1).split(",", -1)) {
                int colon = hp.lastIndexOf(':');
                String host = colon < 0 ? hp : hp.substring(0, colon);
                int port;
                try {
                    port = colon < 0 ? (sentinel ? RedisConnector.DEFAULT_SENTINEL_PORT : RedisConnector.DEFAULT_CLUSTER_PORT)
                            : Integer.parseInt(hp.substring(colon + 1));
                } catch (NumberFormatException e) {
                    port = -1;
                }
                if (host.isEmpty() || port < 1 || port > 65535) {
                    throw new IllegalArgumentException(scheme + ":// URL has a bad " + (sentinel ? "sentinel" : "seed node")
                            + " address '" + hp + "': " + RedisConnector.redact(uri) + " (expected " + scheme
                            + "://[user:pass@]host:port[,host:port...]" + (sentinel ? "[/db])" : ")"));
                }
                hosts.add(Map.entry(host, port));
            }
        } else {
            if (uri.getHost() == null || uri.getHost().isEmpty()) {
                throw new IllegalArgumentException(scheme + ":// URL without a host: " + RedisConnector.redact(uri)
                        + " (expected " + scheme + "://[user:pass@]host:port[/db])");
            }
            int port = uri.getPort() < 0 ? RedisURI.DEFAULT_REDIS_PORT : uri.getPort();
            if (port < 1 || port > 65535) {
                throw new IllegalArgumentException(scheme + ":// URL without a valid port: " + RedisConnector.redact(uri));
            }
            userInfo = uri.getRawUserInfo();
            hosts.add(Map.entry(uri.getHost(), port));
        }
        return new Authority(userInfo, hosts);
    }

    /** The database number of the URL's path (0 without one). */
    private static int database(URI uri, String scheme) {
        boolean cluster = scheme.equals("redis-cluster");
        int db = 0;
        String path = uri.getPath();
        if (path != null && !path.isEmpty() && !path.equals("/")) {
            if (cluster) {
                throw new IllegalArgumentException("redis-cluster:// URL cannot name a database (a cluster has only 0): "
                        + RedisConnector.redact(uri));
            }
            try {
                db = Integer.parseInt(path.substring(1));
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException(scheme + ":// URL path must be a database number: " + RedisConnector.redact(uri));
            }
            if (db < 0) {
                throw new IllegalArgumentException(scheme + ":// URL has a negative database number: " + RedisConnector.redact(uri));
            }
        }
        return db;
    }

    /** The URL as logs and errors show it: no credentials. */
    String shown() {
        return scheme + "://" + String.join(",", hosts.stream().map(h -> h.getKey() + ":" + h.getValue()).toList())
                + (db == 0 ? "" : "/" + db) + (sentinel() ? " (master " + serviceName + ")" : "");
    }

    /** Where the connector connects: one server (through sentinels or not) or a cluster. */
    RedisEndpoint endpoint() {
        boolean sentinel = sentinel();
        boolean cluster = cluster();
        RedisEndpoint endpoint;
        if (cluster) {
            List<RedisURI> seeds = new ArrayList<>();
            for (Map.Entry<String, Integer> h : hosts) {
                seeds.add(RedisConnector.withCredentials(RedisURI.builder().withHost(h.getKey()).withPort(h.getValue()), userInfo)
                        .withTimeout(timeout).build());
            }
            endpoint = new RedisEndpoint.Cluster(seeds, timeout);
        } else {
            RedisURI.Builder b;
            if (sentinel) {
                b = RedisURI.builder().withSentinelMasterId(serviceName);
                hosts.forEach(h -> b.withSentinel(h.getKey(), h.getValue()));
            } else {
                b = RedisURI.builder().withHost(hosts.get(0).getKey()).withPort(hosts.get(0).getValue())
                        .withSsl(scheme.equals("rediss"));
            }
            b.withDatabase(db).withTimeout(timeout);
            endpoint = new RedisEndpoint.Standalone(RedisConnector.withCredentials(b, userInfo).build(), timeout, tlsCaFile);
        }
        return endpoint;
    }
}
