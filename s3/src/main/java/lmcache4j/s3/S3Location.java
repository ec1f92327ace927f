package lmcache4j.s3;

import java.net.URI;
import java.net.URISyntaxException;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import lmcache4j.engine.remote.RemoteUrls;

/**
 * Where an {@code s3://} {@code remote_url} points: a bucket, and the endpoint that serves it.
 *
 * <ul>
 *   <li>{@code s3://BUCKET}: an AWS bucket, in {@code s3_region} (LMCache's form).</li>
 *   <li>{@code s3://BUCKET.s3.REGION.amazonaws.com} (or {@code BUCKET.s3.amazonaws.com}): an AWS bucket,
 *       the region read from the host (LMCache's form).</li>
 *   <li>{@code s3://BUCKET.HOST[:PORT]}: a bucket on an S3-compatible endpoint {@code HOST}, addressed
 *       virtual-host style, as LMCache's connector sends it ({@code Host: BUCKET.HOST}).</li>
 *   <li>{@code s3://HOST[:PORT]/BUCKET} (lmcache4j): path-style addressing, for endpoints without a
 *       DNS name per bucket (a local s3proxy or MinIO).</li>
 * </ul>
 *
 * lmcache4j-only query options: {@code disable_tls=true|false} and {@code region=NAME}, which win
 * over {@code extra_config}. Credentials never go in the URL.
 *
 * @param bucket    the bucket
 * @param endpoint  the endpoint host and port ({@code host[:port]}); empty for AWS's own endpoints
 * @param pathStyle whether requests name the bucket in the path rather than the host
 * @param region    the region the URL names (its host, or {@code region=}), if any
 * @param disableTls {@code disable_tls=} in the URL, if given
 */
public record S3Location(String bucket, Optional<String> endpoint, boolean pathStyle, Optional<String> region,
                         Optional<Boolean> disableTls) {
    private static final Pattern AWS_REGIONAL = Pattern.compile("(.+)\\.s3[.-]([a-z0-9-]+)\\.amazonaws\\.com");
    private static final Pattern AWS_GLOBAL = Pattern.compile("(.+)\\.s3\\.amazonaws\\.com");
    private static final Pattern BUCKET = Pattern.compile("[a-z0-9][a-z0-9.\\-]{1,61}[a-z0-9]");

    public S3Location {
        Objects.requireNonNull(bucket, "bucket");
        Objects.requireNonNull(endpoint, "endpoint");
        Objects.requireNonNull(region, "region");
        Objects.requireNonNull(disableTls, "disableTls");
        if (!BUCKET.matcher(bucket).matches()) {
            throw new IllegalArgumentException("remote_url names bucket '" + bucket + "', which is not an S3 bucket name "
                    + "(3 to 63 lowercase letters, digits, dots and hyphens, starting and ending with a letter or digit)");
        }
    }

    /**
     * Reads an {@code s3://} URL.
     *
     * @throws IllegalArgumentException naming what is wrong (never echoing credentials)
     */
    public static S3Location parse(String url) {
        URI uri;
        try {
            uri = new URI(url);
        } catch (URISyntaxException e) {
            throw new IllegalArgumentException("remote_url is not a valid s3:// URL: " + e.getReason() + " at character "
                    + (e.getIndex() + 1));
        }
        if (!"s3".equalsIgnoreCase(uri.getScheme())) {
            throw new IllegalArgumentException("remote_url for the S3 tier must start with s3://");
        }
        if (uri.getRawUserInfo() != null) {
            throw new IllegalArgumentException("remote_url s3:// carries no credentials: set extra_config "
                    + "aws_access_key_id and aws_secret_access_key, or use the AWS credentials chain (AWS_ACCESS_KEY_ID and "
                    + "AWS_SECRET_ACCESS_KEY, ~/.aws/credentials, an instance role)");
        }
        String host = uri.getHost();
        if (host == null || host.isEmpty()) {
            throw new IllegalArgumentException("remote_url s3:// needs a bucket or an endpoint: s3://BUCKET, "
                    + "s3://BUCKET.s3.REGION.amazonaws.com, s3://BUCKET.HOST[:PORT] or s3://HOST:PORT/BUCKET");
        }
        host = host.toLowerCase(Locale.ROOT);
        Map<String, String> options = RemoteUrls.query(uri);
        Optional<String> region = Optional.ofNullable(options.remove("region")).filter(r -> !r.isEmpty());
        Optional<Boolean> disableTls = Optional.ofNullable(options.remove("disable_tls")).map(S3Location::bool);
        if (!options.isEmpty()) {
            throw new IllegalArgumentException("remote_url s3:// option '" + options.keySet().iterator().next()
                    + "' is unknown; valid: disable_tls=true|false, region=NAME");
        }
        String port = uri.getPort() >= 0 ? ":" + uri.getPort() : "";
        String path = uri.getPath() == null ? "" : uri.getPath();
        if (!path.isEmpty() && !path.equals("/")) {
            String bucket = path.substring(1);
            if (bucket.endsWith("/")) {
                bucket = bucket.substring(0, bucket.length() - 1);
            }
            if (bucket.contains("/")) {
                throw new IllegalArgumentException("remote_url s3://HOST/BUCKET names one bucket; '" + bucket
                        + "' has a '/' (LMCache's S3 objects take no key prefix)");
            }
            return new S3Location(bucket, Optional.of(host + port), true, region, disableTls);
        }
        Matcher regional = AWS_REGIONAL.matcher(host);
        if (port.isEmpty() && regional.matches()) {
            if (regional.group(2).startsWith("express") || host.contains(".s3express-")) {
                throw new IllegalArgumentException("remote_url names an S3 Express One Zone bucket; lmcache4j does not "
                        + "support S3 Express's session authentication (s3_enable_s3express)");
            }
            return new S3Location(regional.group(1), Optional.empty(), false, region.or(() -> Optional.of(regional.group(2))),
                    disableTls);
        }
        Matcher global = AWS_GLOBAL.matcher(host);
        if (port.isEmpty() && global.matches()) {
            return new S3Location(global.group(1), Optional.empty(), false, region, disableTls);
        }
        int dot = host.indexOf('.');
        boolean address = host.matches("[0-9.]+") || host.startsWith("[") || host.equals("localhost");
        if (dot < 0 && port.isEmpty() && !address) {
            return new S3Location(host, Optional.empty(), false, region, disableTls);
        }
        if (dot < 0 || address) {
            throw new IllegalArgumentException("remote_url s3://" + host + port + " names an endpoint but no bucket: "
                    + "use s3://" + host + port + "/BUCKET (path style) or s3://BUCKET." + host + port);
        }
        return new S3Location(host.substring(0, dot), Optional.of(host.substring(dot + 1) + port), false, region, disableTls);
    }

    private static boolean bool(String v) {
        return switch (v.toLowerCase(Locale.ROOT)) {
            case "true", "1" -> true;
            case "false", "0" -> false;
            default -> throw new IllegalArgumentException("remote_url s3:// option disable_tls='" + v + "' is not true or false");
        };
    }

    /** The endpoint's URI for the SDK: {@code http://} or {@code https://} as {@code tls} says; empty for AWS. */
    public Optional<URI> endpointUri(boolean tls) {
        return endpoint.map(e -> URI.create((tls ? "https://" : "http://") + e));
    }

    /** The URL without options, for logs and metrics: {@code s3://host[:port]/bucket} or {@code s3://bucket}. */
    public String display() {
        return endpoint.map(e -> pathStyle ? "s3://" + e + "/" + bucket : "s3://" + bucket + "." + e)
                .orElse("s3://" + bucket + region.map(r -> " (" + r + ")").orElse(""));
    }
}
