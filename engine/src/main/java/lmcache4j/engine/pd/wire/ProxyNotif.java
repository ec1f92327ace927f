package lmcache4j.engine.pd.wire;

import java.util.Objects;

/**
 * A sender's notice to the proxy that it has pushed request {@code reqId}'s KV (LMCache's
 * {@code ProxyNotif}): one per tensor-parallel rank; the proxy sends the request on to the decoder
 * once every rank's notice has come.
 *
 * @param reqId the request's id, as the proxy gave it
 */
public record ProxyNotif(String reqId) {
    public ProxyNotif {
        Objects.requireNonNull(reqId, "reqId");
    }
}
