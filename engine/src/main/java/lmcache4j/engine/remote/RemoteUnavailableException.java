package lmcache4j.engine.remote;

import java.io.IOException;
import java.io.UncheckedIOException;

/** A well-formed {@code remote_url} whose store cannot be opened (an {@code fs://} directory that cannot be made). */
public final class RemoteUnavailableException extends UncheckedIOException {
    private static final long serialVersionUID = 1L;

    RemoteUnavailableException(String message, IOException cause) {
        super(message, cause);
    }
}
