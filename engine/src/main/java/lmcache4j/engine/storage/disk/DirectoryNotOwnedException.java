package lmcache4j.engine.storage.disk;

import java.nio.file.Path;

/**
 * The disk tier was pointed at a directory it does not own: one holding files lmcache4j did not
 * write and no marker saying lmcache4j claimed it, or a forged marker. Nothing in it was touched.
 * A command line reports it as a bad argument (choose another directory).
 */
public final class DirectoryNotOwnedException extends IllegalStateException {
    private static final long serialVersionUID = 1L;

    private final transient Path directory;

    public DirectoryNotOwnedException(Path directory, String message) {
        super(message);
        this.directory = directory;
    }

    /** The directory that was refused. */
    public Path directory() {
        return directory;
    }
}
