package lmcache4j.engine.storage.disk;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryIteratorException;
import java.nio.file.DirectoryStream;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The file that claims a directory for the disk tier: {@value #NAME}. The tier writes it into a new
 * or empty directory, and into one that holds nothing but its own chunk files (left by a version
 * from before the marker). A directory holding anything else and no marker is refused unless the
 * caller asks to claim it ({@code extra_config.local_disk.claim_nonempty_dir}): pointing
 * {@code local_disk} at a home or project directory by mistake must not turn it into a cache. Even
 * a claimed directory's foreign files are never deleted; the marker only says the cache was asked to
 * live there.
 */
final class ChunkDirectoryMarker {
    /** The marker's file name. */
    static final String NAME = ".lmcache4j-chunks";
    /** The marker's first line, which identifies it. */
    static final String FIRST_LINE = "lmcache4j chunk directory";
    private static final String TEXT = FIRST_LINE + "\n"
            + "format: LMC4JKV chunk files, version " + ChunkFileFormat.VERSION + "\n"
            + "This directory is the disk tier (local_disk) of lmcache4j. Files named *.lmc that start with the\n"
            + "LMC4JKV magic, and its *.lmc.tmp-<pid>-<n> temp files, are written, evicted and deleted by it;\n"
            + "nothing else here is ever deleted, overwritten or followed.\n";
    private static final int EXAMPLES = 5;
    private static final System.Logger LOG = System.getLogger(ChunkDirectoryMarker.class.getName());

    private ChunkDirectoryMarker() {
    }

    /**
     * Makes sure {@code dir} is the tier's: it has a valid marker, or it gets one now.
     *
     * @param claimNonEmpty whether a directory with foreign entries and no marker may be claimed
     * @throws IllegalStateException naming the directory, a few of its entries and what to do, when
     *                               it is refused
     * @throws UncheckedIOException  naming the directory when it cannot be listed or the marker written
     */
    static void claim(Path dir, boolean claimNonEmpty) {
        Path marker = dir.resolve(NAME);
        try {
            Optional<BasicFileAttributes> attrs = ChunkFileOwnership.attributes(marker);
            if (attrs.isPresent()) {
                requireGenuine(dir, marker, attrs.get());
                return;
            }
            Strangers strangers = strangers(dir);
            if (strangers.count > 0 && !claimNonEmpty) {
                throw new DirectoryNotOwnedException(dir, "refusing to use " + dir + " as the disk tier's directory (local_disk): it "
                        + "holds " + strangers.describe() + ", and no " + NAME + " marker says lmcache4j owns it. Point "
                        + "local_disk at a new or empty directory, or set extra_config local_disk.claim_nonempty_dir: true "
                        + "to use this one anyway (lmcache4j never deletes, overwrites or follows files it did not write).");
            }
            write(marker);
            if (strangers.count > 0) {
                LOG.log(System.Logger.Level.WARNING, "claimed {0} for the disk tier (local_disk.claim_nonempty_dir): it "
                        + "holds {1}, which are left alone", dir, strangers.describe());
            }
        } catch (FileAlreadyExistsException e) {
            claim(dir, claimNonEmpty); // another process wrote the marker just now: check that one
        } catch (IOException e) {
            throw new UncheckedIOException("cannot claim " + dir + " for the disk tier: " + e.getMessage(), e);
        }
    }

    private static void requireGenuine(Path dir, Path marker, BasicFileAttributes attrs) throws IOException {
        if (!attrs.isRegularFile()) {
            throw new DirectoryNotOwnedException(dir, "refusing to use " + dir + " as the disk tier's directory (local_disk): "
                    + marker + " is not a regular file (a symlink or a directory), so lmcache4j did not write it; "
                    + "remove it, or point local_disk at a new or empty directory");
        }
        String first;
        try (BufferedReader r = new BufferedReader(Channels.newReader(
                FileChannel.open(marker, StandardOpenOption.READ, LinkOption.NOFOLLOW_LINKS), StandardCharsets.UTF_8))) {
            first = r.readLine();
        }
        if (!FIRST_LINE.equals(first)) {
            throw new DirectoryNotOwnedException(dir, "refusing to use " + dir + " as the disk tier's directory (local_disk): "
                    + marker + " does not start with '" + FIRST_LINE + "', so lmcache4j did not write it; remove it, "
                    + "or point local_disk at a new or empty directory");
        }
    }

    private static void write(Path marker) throws IOException {
        try (FileChannel ch = FileChannel.open(marker, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE,
                LinkOption.NOFOLLOW_LINKS)) {
            ch.write(StandardCharsets.UTF_8.encode(TEXT));
        }
    }

    /** Entries of {@code dir} that are not the cache's: their count and the first few names. */
    private record Strangers(int count, List<String> examples) {
        String describe() {
            return count + " entr" + (count == 1 ? "y" : "ies") + " that lmcache4j did not write ("
                    + String.join(", ", examples) + (count > examples.size() ? ", ..." : "") + ")";
        }
    }

    private static Strangers strangers(Path dir) throws IOException {
        int count = 0;
        List<String> examples = new ArrayList<>();
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(dir)) {
            for (Path p : entries) {
                Optional<BasicFileAttributes> attrs = ChunkFileOwnership.attributes(p);
                if (attrs.isEmpty() || ChunkFileOwnership.isChunkFile(p, attrs.get())
                        || ChunkFileOwnership.isTempFile(p, attrs.get())) {
                    continue;
                }
                count++;
                if (examples.size() < EXAMPLES) {
                    examples.add(p.getFileName().toString());
                }
            }
        } catch (DirectoryIteratorException e) {
            throw e.getCause();
        }
        return new Strangers(count, examples);
    }
}
