package lmcache4j.engine.pd.wire;

import java.io.IOException;

/** A PD message or frame that breaks the protocol: malformed, oversized, out of order, or with a wrong tag. */
public class PdProtocolException extends IOException {
    private static final long serialVersionUID = 1L;

    public PdProtocolException(String message) {
        super(message);
    }
}
