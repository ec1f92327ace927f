package lmcache4j.engine.remote.fs;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.DirectoryStream;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

import lmcache4j.allocator.MemoryObj;
import lmcache4j.engine.key.CacheKey;
import lmcache4j.engine.key.CacheKeys;
import lmcache4j.engine.key.ChunkHash;
import lmcache4j.engine.remote.RemoteMetadata;

/**
 * Chunks stored as files on a (shared) file system in the layout of LMCache's FS connector
 * ({@code lmcache/v1/storage_backend/connector/fs_connector.py}), so that LMCache and lmcache4j
 * processes can read each other's chunks:
 *
 * <ul>
 *   <li>one file per key, {@code <base>/<key string with "/" replaced>.data} (see {@link FileNaming});
 *   <li>with several base paths, the key's chunk hash as an unsigned integer modulo the number of
 *       paths picks the base ({@code abs(key.chunk_hash) % len(base_paths)});
 *   <li>content = the 28-byte {@link RemoteMetadata} header, then the payload;
 *   <li>writes go to a temporary file ({@code <stem>.tmp} next to the final file, or
 *       {@code <base>/<relativeTmpDir>/<name>.data}) that is then atomically renamed over the
 *       final name, so a reader never sees a partial {@code .data} file; a failed write deletes
 *       the temporary file.
 * </ul>
 *
 * <p>Not covered: LMCache's {@code save_chunk_meta: false} mode (files without the header) and
 * its {@code O_DIRECT} path, which only applies to that mode. Like LMCache, nothing is fsynced.
 *
 * <p>I/O goes through {@link FileChannel} straight from and into the objects' native memory
 * ({@link java.lang.foreign.MemorySegment#asByteBuffer()}); no heap copy of the payload is made.
 * Thread-safe: the store holds no mutable state. Two writers of the same key at once share
 * LMCache's fixed temporary name, as LMCache's own writers do; the rename still only ever
 * publishes a file one writer finished, but the two may interleave inside the temporary file.
 */
public final class FsChunkStore {
    private final List<Path> basePaths;
    private final FileNaming naming;
    private final Path relativeTmpDir;

    /** A store over {@code basePaths} with current LMCache naming and {@code .tmp} siblings. */
    public FsChunkStore(List<Path> basePaths) throws IOException {
        this(basePaths, FileNaming.SEP, null);
    }

    /**
     * A store over {@code basePaths}, creating each (with parents) and, if given, its
     * {@code relativeTmpDir} (LMCache's {@code fs_connector_relative_tmp_dir}).
     *
     * @param naming         how key strings become file names
     * @param relativeTmpDir where temporary files go, relative to each base; null for a
     *                       {@code .tmp} sibling of the final file
     * @throws IllegalArgumentException when no path is given or {@code relativeTmpDir} is absolute
     * @throws IOException              naming the directory that could not be created
     */
    public FsChunkStore(List<Path> basePaths, FileNaming naming, Path relativeTmpDir) throws IOException {
        Objects.requireNonNull(basePaths, "basePaths");
        this.naming = Objects.requireNonNull(naming, "naming");
        if (basePaths.isEmpty()) {
            throw new IllegalArgumentException("an FS chunk store needs at least one base path");
        }
        if (relativeTmpDir != null && relativeTmpDir.isAbsolute()) {
            throw new IllegalArgumentException("the temporary directory must be relative to the base paths, was "
                    + relativeTmpDir);
        }
        this.basePaths = List.copyOf(basePaths);
        this.relativeTmpDir = relativeTmpDir;
        for (Path base : this.basePaths) {
            try {
                Files.createDirectories(base);
            } catch (IOException e) {
                throw io("create base directory", base, e);
            }
            if (relativeTmpDir != null) {
                Path tmp = base.resolve(relativeTmpDir);
                try {
                    Files.createDirectory(tmp); // LMCache: mkdir(parents=False, exist_ok=True)
                } catch (FileAlreadyExistsException e) {
                    if (!Files.isDirectory(tmp)) {
                        throw io("create temporary directory", tmp, e);
                    }
                } catch (IOException e) {
                    throw io("create temporary directory", tmp, e);
                }
            }
        }
    }

    /**
     * A store for an LMCache {@code fs://} URL, for example {@code fs://localhost:0/tmp/lmcache}
     * or {@code fs://localhost:0/mnt/a,/mnt/b}; see {@link #parseUrl}.
     */
    public static FsChunkStore fromUrl(String url) throws IOException {
        return new FsChunkStore(parseUrl(url));
    }

    /**
     * The base paths of an LMCache {@code fs://} URL. LMCache parses it with Python's
     * {@code urlparse} and uses only its path, split on commas (each part stripped): the
     * documented form is {@code fs://host:port/path[,/path2...]} (the host and port are required
     * by LMCache's parser and ignored). {@code fs:///path} is also accepted here. A query
     * ({@code ?...}) or fragment is ignored, as {@code urlparse} separates it from the path.
     *
     * @throws IllegalArgumentException naming the URL and what is wrong with it
     */
    public static List<Path> parseUrl(String url) {
        String scheme = "fs://";
        if (url == null || !url.startsWith(scheme)) {
            throw new IllegalArgumentException("'" + url + "' is not an fs:// URL");
        }
        String rest = url.substring(scheme.length());
        int end = rest.length();
        for (char c : new char[] {'?', '#'}) {
            int at = rest.indexOf(c);
            if (at >= 0 && at < end) {
                end = at;
            }
        }
        rest = rest.substring(0, end);
        int slash = rest.indexOf('/');
        if (slash < 0) {
            throw new IllegalArgumentException("fs URL '" + url + "' has no path (expected fs://host:port/path)");
        }
        String authority = rest.substring(0, slash);
        if (!authority.isEmpty()) {
            int at = authority.lastIndexOf('@');
            String hostPort = authority.substring(at + 1);
            int colon = hostPort.lastIndexOf(':');
            if (colon <= 0 || colon == hostPort.length() - 1
                    || !hostPort.substring(colon + 1).chars().allMatch(Character::isDigit)) {
                throw new IllegalArgumentException("fs URL '" + url + "': the authority '" + authority
                        + "' must be host:port (LMCache requires both) or empty (fs:///path)");
            }
        }
        String path = rest.substring(slash);
        List<Path> paths = new ArrayList<>();
        for (String part : path.split(",", -1)) {
            String p = part.strip();
            if (p.isEmpty()) {
                throw new IllegalArgumentException("fs URL '" + url + "' has an empty path in '" + path + "'");
            }
            paths.add(Path.of(p));
        }
        return paths;
    }

    public List<Path> basePaths() {
        return basePaths;
    }

    public FileNaming naming() {
        return naming;
    }

    // ---- layout -----------------------------------------------------------------------------

    /**
     * Which base path holds {@code key}: 0 with one path; else the chunk hash read as an unsigned
     * big-endian integer, modulo the number of paths. That is LMCache's
     * {@code abs(key.chunk_hash) % len(base_paths)} for its integer hashes (a key string's hex
     * parsed back with {@code int(hex, 16)} gives exactly this value). A layer key uses its
     * chunk's hash, so all layers of a chunk share a base.
     */
    public int basePathIndex(CacheKey key) {
        int n = basePaths.size();
        return n == 1 ? 0 : hashModulo(key.chunkKey().chunkHash(), n);
    }

    /** The unsigned big-endian value of {@code hash}, modulo {@code n}. */
    static int hashModulo(ChunkHash hash, int n) {
        long rem = 0;
        for (int i = 0; i < hash.length(); i++) {
            rem = ((rem << 8) | (hash.byteAt(i) & 0xFF)) % n;
        }
        return (int) rem;
    }

    /** The file that holds {@code key}, exactly as LMCache names it. */
    public Path pathFor(CacheKey key) {
        return basePaths.get(basePathIndex(key)).resolve(naming.fileName(key.toKeyString()));
    }

    /** The temporary file a write of {@code key} goes through before its rename. */
    public Path tmpPathFor(CacheKey key) {
        Path base = basePaths.get(basePathIndex(key));
        String name = naming.fileName(key.toKeyString());
        if (relativeTmpDir != null) {
            return base.resolve(relativeTmpDir).resolve(name);
        }
        return base.resolve(naming.stem(key.toKeyString()) + FileNaming.TMP_SUFFIX);
    }

    // ---- operations -------------------------------------------------------------------------

    /** Whether a file for {@code key} exists (LMCache's {@code exists}: a path check, no read). */
    public boolean exists(CacheKey key) {
        return Files.exists(pathFor(key));
    }

    /**
     * Stores {@code obj} under {@code key}: header ({@link RemoteMetadata#forObject}) and payload
     * into the temporary file, then an atomic rename over the final name (replacing an older
     * file). The caller keeps its reference to {@code obj}.
     *
     * @throws IllegalArgumentException when LMCache's header cannot describe the object
     * @throws IOException              naming the file and the operation that failed; the
     *                                  temporary file is deleted
     */
    public void put(CacheKey key, MemoryObj obj) throws IOException {
        put(key, RemoteMetadata.forObject(obj), obj.segment());
    }

    /** As {@link #put(CacheKey, MemoryObj)} for a header and payload given separately. */
    public void put(CacheKey key, RemoteMetadata metadata, MemorySegment payloadBytes) throws IOException {
        Path target = pathFor(key);
        Path tmp = tmpPathFor(key);
        ByteBuffer header = ByteBuffer.wrap(metadata.toBytes());
        ByteBuffer payload = payloadBytes.asByteBuffer();
        try {
            try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                    StandardOpenOption.TRUNCATE_EXISTING)) {
                ByteBuffer[] parts = {header, payload};
                while (header.hasRemaining() || payload.hasRemaining()) {
                    ch.write(parts);
                }
            } catch (IOException e) {
                throw io("write temporary file", tmp, e);
            }
            try {
                Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            } catch (IOException e) {
                throw new IOException("FS chunk store: cannot rename '" + tmp + "' to '" + target + "': " + e, e);
            }
        } catch (IOException | RuntimeException e) {
            try {
                Files.deleteIfExists(tmp);
            } catch (IOException cleanup) {
                e.addSuppressed(io("delete temporary file", tmp, cleanup));
            }
            throw e;
        }
    }

    /**
     * The header of {@code key}'s file: empty when there is no file or it is shorter than a
     * header (a miss, as in LMCache).
     *
     * @throws IOException naming the file: it cannot be read, or its header is malformed (LMCache
     *                     logs this and misses; the caller may remove the file)
     */
    public Optional<RemoteMetadata> readMetadata(CacheKey key) throws IOException {
        Path file = pathFor(key);
        FileChannel ch = open(file);
        if (ch == null) {
            return Optional.empty();
        }
        try (ch) {
            return readHeader(ch, file);
        }
    }

    /**
     * Reads {@code key}'s payload into {@code dst}: {@code dst.byteSize()} bytes right after the
     * header, as LMCache reads {@code len(memory_obj.byte_array)} bytes into the object it
     * allocated from the header. The file's header must still equal {@code metadata} (the file
     * may have been replaced since {@link #readMetadata}).
     *
     * @return true when {@code dst} was filled; false on a miss: no file, a header that changed,
     *         or a file too short (then {@code dst}'s bytes are unspecified)
     * @throws IllegalArgumentException when {@code dst} is larger than {@code metadata.length()}
     * @throws IOException              naming the file when it cannot be read or its header is malformed
     */
    public boolean get(CacheKey key, RemoteMetadata metadata, MemoryObj dst) throws IOException {
        if (dst.byteSize() > metadata.length()) {
            throw new IllegalArgumentException(dst + " is larger than the stored payload of " + metadata.length()
                    + " bytes (" + metadata + ")");
        }
        Path file = pathFor(key);
        FileChannel ch = open(file);
        if (ch == null) {
            return false;
        }
        try (ch) {
            Optional<RemoteMetadata> onDisk = readHeader(ch, file);
            if (onDisk.isEmpty() || !onDisk.get().equals(metadata)) {
                return false;
            }
            ByteBuffer buf = dst.segment().asByteBuffer();
            long pos = RemoteMetadata.BYTES;
            while (buf.hasRemaining()) {
                int n = ch.read(buf, pos);
                if (n < 0) {
                    return false;
                }
                pos += n;
            }
            return true;
        } catch (DescribedIOException e) {
            throw e;
        } catch (IOException e) {
            throw io("read payload of", file, e);
        }
    }

    /**
     * Deletes {@code key}'s file.
     *
     * @return whether a file was deleted
     * @throws IOException naming the file when it exists but cannot be deleted
     */
    public boolean remove(CacheKey key) throws IOException {
        Path file = pathFor(key);
        try {
            return Files.deleteIfExists(file);
        } catch (IOException e) {
            throw io("delete", file, e);
        }
    }

    /**
     * The stems of all {@code *.data} files in every base path (LMCache's {@code list()}: file
     * names without {@code .data}, not yet turned back into keys). Temporary files are not listed.
     */
    public List<String> listStems() throws IOException {
        List<String> stems = new ArrayList<>();
        for (Path base : basePaths) {
            try (DirectoryStream<Path> dir = Files.newDirectoryStream(base, "*" + FileNaming.SUFFIX)) {
                for (Path p : dir) {
                    String name = p.getFileName().toString();
                    if (Files.isRegularFile(p)) {
                        stems.add(name.substring(0, name.length() - FileNaming.SUFFIX.length()));
                    }
                }
            } catch (IOException e) {
                throw io("list", base, e);
            }
        }
        return stems;
    }

    /**
     * The keys stored, parsed back from the file names. Files whose names do not parse as keys
     * (other tools' files, older key formats) are left out; {@link #listStems()} has them all.
     *
     * @throws UnsupportedOperationException with {@link FileNaming#DASH} naming, which is not reversible
     */
    public List<CacheKey> list() throws IOException {
        if (!naming.isReversible()) {
            naming.keyString(""); // throws, explaining why
        }
        List<CacheKey> keys = new ArrayList<>();
        for (String stem : listStems()) {
            try {
                keys.add(CacheKeys.parse(naming.keyString(stem)));
            } catch (IllegalArgumentException notAKey) {
                // not one of ours, or a key format this version cannot parse
            }
        }
        return keys;
    }

    // ---- helpers ----------------------------------------------------------------------------

    /** {@code file} opened for reading, or null when it does not exist. */
    private static FileChannel open(Path file) throws IOException {
        try {
            return FileChannel.open(file, StandardOpenOption.READ);
        } catch (NoSuchFileException e) {
            return null;
        } catch (IOException e) {
            throw io("open", file, e);
        }
    }

    /** The header at offset 0, or empty when the channel holds fewer than a header's bytes. */
    private static Optional<RemoteMetadata> readHeader(FileChannel ch, Path file) throws IOException {
        ByteBuffer header = ByteBuffer.allocate(RemoteMetadata.BYTES);
        long pos = 0;
        try {
            while (header.hasRemaining()) {
                int n = ch.read(header, pos);
                if (n < 0) {
                    return Optional.empty();
                }
                pos += n;
            }
        } catch (IOException e) {
            throw io("read header of", file, e);
        }
        header.flip();
        try {
            return Optional.of(RemoteMetadata.decode(header));
        } catch (IllegalArgumentException e) {
            throw new DescribedIOException("FS chunk store: corrupt chunk file '" + file + "': " + e.getMessage(), e);
        }
    }

    /** An IOException whose message already names the file and operation. */
    private static final class DescribedIOException extends IOException {
        private static final long serialVersionUID = 1L;

        DescribedIOException(String message, Throwable cause) {
            super(message, cause);
        }
    }

    private static IOException io(String operation, Path file, IOException cause) {
        return new DescribedIOException("FS chunk store: cannot " + operation + " '" + file + "': " + cause, cause);
    }

    @Override
    public String toString() {
        return "FsChunkStore" + basePaths + "[" + naming + (relativeTmpDir == null ? "" : ", tmp " + relativeTmpDir) + "]";
    }
}
