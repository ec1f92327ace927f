package lmcache4j.engine.storage.disk;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryIteratorException;
import java.nio.file.DirectoryStream;
import java.nio.file.FileStore;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.UnaryOperator;
import java.util.zip.CRC32C;

import com.sun.nio.file.ExtendedOpenOption;

import lmcache4j.allocator.MemoryObj;
import lmcache4j.engine.key.CacheKey;
import lmcache4j.engine.key.CacheKeys;

/**
 * The file layer of the local disk tier: one file per chunk in one directory.
 *
 * <p>A file is a {@link ChunkFileHeader#BYTES 4 KiB} header (layout in {@link ChunkFileFormat})
 * followed by the payload, zero-padded to a 4 KiB multiple, so that the header, the aligned body
 * and the last (bounce-buffered) block can all be transferred with O_DIRECT. Every file is written
 * the same way whether or not O_DIRECT is used, so either mode reads the other's files.
 *
 * <p>Writes go to {@code <name>.lmc.tmp-<pid>-<n>}, are fsynced when asked, then renamed over
 * {@link #pathFor(CacheKey)} atomically: a reader or a restart sees either no file or a complete
 * one. {@link #recover()} deletes the temp files a crash leaves behind. Payload CRC32C is checked on
 * every read and by {@link #verify}, which the tier runs on recovered files before serving them.
 *
 * <p>The cache deletes, overwrites and follows nothing it did not write ({@link ChunkFileOwnership}):
 * only regular files with its names and its magic are its own; symlinks never are. A marker file
 * ({@link ChunkDirectoryMarker}) claims the directory, and a non-empty directory without one is
 * refused unless the caller asks to claim it.
 *
 * <p>Whether O_DIRECT is used is decided once, in the constructor, by a probe write and read. It is
 * still skipped for an object whose memory is not 4 KiB-aligned (then that one transfer is
 * buffered). Payload bytes go straight between the object's off-heap segment and the file; only
 * the header and the payload's last partial block pass through a small per-thread aligned buffer.
 *
 * <p>Thread-safe: concurrent writes and reads of different or equal keys are fine (the last
 * rename wins). {@link #recover()} must run before writes start: it deletes every temp file.
 */
public final class ChunkFiles {
    private static final System.Logger LOG = System.getLogger(ChunkFiles.class.getName());
    private static final int ALIGN = ChunkFileHeader.ALIGNMENT;
    /** Largest single transfer: a multiple of the alignment that a ByteBuffer can hold. */
    private static final long MAX_TRANSFER = 1L << 30;
    private static final long PID = ProcessHandle.current().pid();
    private static final AtomicLong TEMP_SEQUENCE = new AtomicLong();
    /** Per thread: [0, 4096) the header, [4096, 8192) the tail block. 4 KiB-aligned. */
    private static final ThreadLocal<MemorySegment> SCRATCH =
            ThreadLocal.withInitial(() -> Arena.ofAuto().allocate(2L * ALIGN, ALIGN));
    /** What the padding after a payload holds (less than one block of it). */
    private static final MemorySegment ZEROS = MemorySegment.ofArray(new byte[ALIGN]);
    // A temp file is always new (O_EXCL): a file or symlink planted at its name is never written through.
    private static final Set<OpenOption> WRITE_BUFFERED =
            Set.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE, LinkOption.NOFOLLOW_LINKS);
    private static final Set<OpenOption> WRITE_DIRECT = Set.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE,
            LinkOption.NOFOLLOW_LINKS, ExtendedOpenOption.DIRECT);
    private static final Set<OpenOption> READ_BUFFERED = Set.of(StandardOpenOption.READ, LinkOption.NOFOLLOW_LINKS);
    private static final Set<OpenOption> READ_DIRECT =
            Set.of(StandardOpenOption.READ, LinkOption.NOFOLLOW_LINKS, ExtendedOpenOption.DIRECT);

    private final Path directory;
    private final boolean fsync;
    private final boolean directIo;
    private final String ioDescription;
    private final UnaryOperator<Path> tempPathOf;
    private final TempFileOpener tempOpener;

    /** How a write creates its temp file; a seam for tests that need the disk to fail. */
    @FunctionalInterface
    interface TempFileOpener {
        FileChannel open(Path temp, Set<OpenOption> options) throws IOException;
    }

    /**
     * Opens (creating if needed) the chunk directory, refusing a non-empty one that is not the
     * cache's, and decides whether O_DIRECT is used.
     *
     * @param directory  the directory of chunk files
     * @param useODirect whether to use O_DIRECT when this file system supports it
     * @param fsync      whether each write is fsynced (file and directory) before it returns
     * @throws UncheckedIOException  naming the directory when it cannot be created or written
     * @throws IllegalStateException when the directory holds files the cache did not write and no
     *                               marker (see {@link #ChunkFiles(Path, boolean, boolean, boolean)})
     */
    public ChunkFiles(Path directory, boolean useODirect, boolean fsync) {
        this(directory, useODirect, fsync, false);
    }

    /**
     * As {@link #ChunkFiles(Path, boolean, boolean)}; with {@code claimNonEmptyDirectory}, a
     * directory that holds other files and no {@code .lmcache4j-chunks} marker is claimed
     * (marked) instead of refused. Its other files are left alone either way.
     */
    public ChunkFiles(Path directory, boolean useODirect, boolean fsync, boolean claimNonEmptyDirectory) {
        this(directory, useODirect, fsync, claimNonEmptyDirectory, ChunkFiles::defaultTempPath, FileChannel::open);
    }

    /** For tests: {@code tempPathOf} maps a final path to the temp file a write goes through. */
    ChunkFiles(Path directory, boolean useODirect, boolean fsync, UnaryOperator<Path> tempPathOf) {
        this(directory, useODirect, fsync, false, tempPathOf, FileChannel::open);
    }

    /** For tests: also how the temp file is opened. */
    ChunkFiles(Path directory, boolean useODirect, boolean fsync, boolean claimNonEmptyDirectory,
               UnaryOperator<Path> tempPathOf, TempFileOpener tempOpener) {
        this.directory = Objects.requireNonNull(directory, "directory").toAbsolutePath().normalize();
        this.fsync = fsync;
        this.tempPathOf = Objects.requireNonNull(tempPathOf, "tempPathOf");
        this.tempOpener = Objects.requireNonNull(tempOpener, "tempOpener");
        try {
            Files.createDirectories(this.directory);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create the chunk directory " + this.directory + ": " + reason(e), e);
        }
        if (!Files.isDirectory(this.directory)) {
            throw new UncheckedIOException(new IOException("the chunk directory " + this.directory + " is not a directory"));
        }
        ChunkDirectoryMarker.claim(this.directory, claimNonEmptyDirectory);
        Probe probe = probe(this.directory, useODirect);
        this.directIo = probe.direct();
        this.ioDescription = probe.description();
        LOG.log(System.Logger.Level.INFO, "chunk files in {0}: {1}", this.directory, ioDescription);
    }

    private static Path defaultTempPath(Path target) {
        return target.resolveSibling(target.getFileName() + ".tmp-" + PID + "-" + TEMP_SEQUENCE.incrementAndGet());
    }

    private record Probe(boolean direct, String description) {
    }

    /** Checks that the directory takes a file, then whether O_DIRECT works in it. */
    private static Probe probe(Path dir, boolean useODirect) {
        Path file = dir.resolve(".probe" + ChunkFileNames.TEMP_MARKER + PID + "-" + TEMP_SEQUENCE.incrementAndGet());
        String fsType = "unknown file system";
        long blockSize = -1;
        boolean created = false;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(2L * ALIGN, ALIGN);
            for (int i = 0; i < ALIGN; i++) {
                buf.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 31 + 7));
            }
            ChunkFileFormat.writeMagic(buf); // so that a probe a crash leaves behind is recognisably the cache's
            try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE,
                    LinkOption.NOFOLLOW_LINKS)) {
                created = true;
                writeFully(ch, buf.asSlice(0, ALIGN), 0);
            } catch (IOException e) {
                throw new UncheckedIOException("the chunk directory " + dir + " is not writable: writing the probe file "
                        + file + " failed: " + describe(e), e);
            }
            if (!useODirect) {
                return new Probe(false, "buffered I/O (O_DIRECT not requested)");
            }
            try {
                FileStore store = Files.getFileStore(file);
                fsType = store.type();
                blockSize = store.getBlockSize();
            } catch (IOException | UnsupportedOperationException e) {
                return new Probe(false, "buffered I/O (O_DIRECT requested, but the file system's block size is unknown: "
                        + describe(e) + ")");
            }
            if (blockSize <= 0 || blockSize > ALIGN || ALIGN % blockSize != 0) {
                return new Probe(false, "buffered I/O (O_DIRECT requested, but " + fsType + "'s block size " + blockSize
                        + " does not divide the " + ALIGN + "-byte alignment of chunk files)");
            }
            try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE,
                    LinkOption.NOFOLLOW_LINKS, ExtendedOpenOption.DIRECT)) {
                writeFully(ch, buf.asSlice(0, ALIGN), 0);
                MemorySegment back = buf.asSlice(ALIGN, ALIGN);
                back.fill((byte) 0);
                if (readFully(ch, back, 0) != ALIGN || back.mismatch(buf.asSlice(0, ALIGN)) != -1) {
                    return new Probe(false, "buffered I/O (O_DIRECT requested, but an aligned write/read on " + fsType
                            + " did not read back what it wrote)");
                }
                return new Probe(true, "direct I/O (O_DIRECT probe succeeded on " + fsType + ", block size " + blockSize + ")");
            } catch (IOException | UnsupportedOperationException e) {
                return new Probe(false, "buffered I/O (O_DIRECT requested, but the probe on " + fsType + " failed: "
                        + describe(e) + ")");
            }
        } finally {
            try {
                if (created) {
                    Files.deleteIfExists(file);
                }
            } catch (IOException e) {
                LOG.log(System.Logger.Level.WARNING, "cannot delete the probe file " + file + ": " + describe(e));
            }
        }
    }

    /** The chunk directory (absolute). */
    public Path directory() {
        return directory;
    }

    /** Whether transfers use O_DIRECT (decided once by the constructor's probe). */
    public boolean directIo() {
        return directIo;
    }

    /** Which I/O mode is used and why, as logged at start. */
    public String ioDescription() {
        return ioDescription;
    }

    /** Whether each write is fsynced before it returns. */
    public boolean fsync() {
        return fsync;
    }

    /**
     * The file of {@code key}: {@code <dir>/<key string, '/' → '-', other unsafe characters
     * escaped>.lmc}. Injective (see {@link ChunkFileNames}).
     */
    public Path pathFor(CacheKey key) {
        return directory.resolve(ChunkFileNames.fileName(key.toKeyString()));
    }

    /**
     * Writes {@code obj}'s bytes and metadata as {@code key}'s chunk file: header and payload to a
     * new temp file, fsync if enabled, atomic rename onto {@link #pathFor(CacheKey)} (replacing an
     * older file of the key, never anything the cache did not write). The caller keeps its reference
     * to {@code obj} for the duration.
     *
     * @return the bytes the file takes on disk
     * @throws IOException naming the file, the operation and the cause (for example a symlink or a
     *                     foreign file at the chunk's name); a temp file the write made is gone
     */
    public long write(CacheKey key, MemoryObj obj) throws IOException {
        Path target = pathFor(key);
        if (ChunkFileOwnership.ofChunkFile(target) == ChunkFileOwnership.Owner.FOREIGN) {
            throw new IOException("cannot write chunk file " + target + ": something the cache did not write is there "
                    + "(a symlink, a directory or a file without the chunk magic); it is left alone, and this chunk is "
                    + "not cached on disk until it is moved away");
        }
        MemorySegment payload = obj.segment();
        long length = payload.byteSize();
        MemorySegment scratch = SCRATCH.get();
        ChunkFileFormat.encode(scratch, key.toKeyString().getBytes(StandardCharsets.UTF_8), obj.format(), obj.dtype(),
                obj.shape(), length, ChunkFileFormat.crc32c(payload));
        long body = length & -(long) ALIGN;
        long tail = length - body;
        long fileBytes = ChunkFileHeader.BYTES + body + (tail == 0 ? 0 : ALIGN);
        boolean direct = directIo && payload.address() % ALIGN == 0;
        Path temp = tempPathOf.apply(target);
        String step = "creating the temp file";
        boolean created = false;
        boolean renamed = false;
        try {
            try (FileChannel ch = tempOpener.open(temp, direct ? WRITE_DIRECT : WRITE_BUFFERED)) {
                created = true;
                step = "writing the header";
                writeFully(ch, scratch.asSlice(0, ALIGN), 0);
                step = "writing the payload";
                writeFully(ch, payload.asSlice(0, body), ChunkFileHeader.BYTES);
                if (tail != 0) {
                    MemorySegment block = scratch.asSlice(ALIGN, ALIGN);
                    MemorySegment.copy(payload, body, block, 0, tail);
                    block.asSlice(tail).fill((byte) 0);
                    writeFully(ch, block, ChunkFileHeader.BYTES + body);
                }
                if (fsync) {
                    step = "fsyncing the temp file";
                    ch.force(true);
                }
                step = "closing the temp file";
            }
            step = "renaming the temp file onto the chunk file";
            Files.move(temp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            renamed = true;
            if (fsync) {
                step = "fsyncing the directory after the rename";
                try (FileChannel dir = FileChannel.open(directory, StandardOpenOption.READ)) {
                    dir.force(true);
                }
            }
            return fileBytes;
        } catch (IOException e) {
            // Not durable, so not written: leave neither the temp file nor an unsynced final file
            // (only what this write made: a file planted at the temp name is not ours to delete).
            if (created) {
                discard(renamed ? target : temp, e);
            }
            throw new IOException("cannot write chunk file " + target + " (" + (direct ? "O_DIRECT" : "buffered") + "): "
                    + step + " failed (temp file " + temp + "): " + describe(e), e);
        } catch (RuntimeException | Error e) {
            if (created) {
                discard(renamed ? target : temp, e);
            }
            throw e;
        }
    }

    private static void discard(Path file, Throwable failure) {
        try {
            Files.deleteIfExists(file);
        } catch (IOException suppressed) {
            failure.addSuppressed(suppressed);
        }
    }

    /**
     * Reads and checks a file's header.
     *
     * @return the header, or empty when {@code file} is not a valid lmcache4j chunk file (no magic,
     *         another version, a truncated or damaged header)
     * @throws IOException naming the file when it cannot be opened or read
     */
    public Optional<ChunkFileHeader> readHeader(Path file) throws IOException {
        ChunkFileFormat.Parsed parsed = inspect(file);
        return parsed.verdict() == ChunkFileFormat.Verdict.VALID ? Optional.of(parsed.header()) : Optional.empty();
    }

    /** Reads and decodes the header of {@code file}, saying why it is not valid. */
    ChunkFileFormat.Parsed inspect(Path file) throws IOException {
        MemorySegment scratch = SCRATCH.get().asSlice(0, ALIGN);
        try (FileChannel ch = FileChannel.open(file, READ_BUFFERED)) {
            return ChunkFileFormat.decode(scratch, readFully(ch, scratch, 0));
        } catch (IOException e) {
            throw new IOException("cannot read the header of chunk file " + file + ": " + describe(e), e);
        }
    }

    /** As {@link #inspect}, but a file that cannot be read is foreign: not proven the cache's, so left alone. */
    private ChunkFileFormat.Parsed inspectOrForeign(Path file) {
        try {
            return inspect(file);
        } catch (IOException e) {
            return ChunkFileFormat.Parsed.foreign(e.getMessage());
        }
    }

    /**
     * Reads the payload of {@code file} into the first {@code header.payloadLength()} bytes of
     * {@code dst.segment()} and verifies its CRC32C. The header on disk is read again (from the same
     * open file) and must match {@code header}, so a file replaced since the index learnt of it is
     * caught.
     *
     * @throws CorruptChunkException on a checksum mismatch, a truncated file, a header whose fields
     *                               disagree with each other or with the file, or one that no longer
     *                               matches {@code header}; the caller deletes the file and counts a miss
     * @throws IOException           naming the file when it cannot be opened or read (for example
     *                               deleted meanwhile)
     * @throws IllegalArgumentException when {@code dst} is smaller than a sound file's payload (a
     *                                  caller's mistake: checked after the file)
     */
    public void readPayload(Path file, ChunkFileHeader header, MemoryObj dst) throws IOException, CorruptChunkException {
        MemorySegment target = dst.segment();
        long length = header.payloadLength();
        MemorySegment scratch = SCRATCH.get();
        boolean direct = directIo && target.address() % ALIGN == 0;
        long body = length & -(long) ALIGN;
        long tail = length - body;
        String step = "opening";
        try (FileChannel ch = FileChannel.open(file, direct ? READ_DIRECT : READ_BUFFERED)) {
            step = "reading the size of";
            long size = ch.size();
            if (size != header.fileBytes()) {
                throw new CorruptChunkException(file, "it is " + size + " bytes, its header says " + header.fileBytes()
                        + " (truncated or overwritten)");
            }
            step = "reading the header of";
            MemorySegment head = scratch.asSlice(0, ALIGN);
            ChunkFileFormat.Parsed onDisk = ChunkFileFormat.decode(head, readFully(ch, head, 0));
            if (onDisk.verdict() != ChunkFileFormat.Verdict.VALID) {
                throw new CorruptChunkException(file, onDisk.reason());
            }
            ChunkFileHeader h = onDisk.header();
            if (!h.keyString().equals(header.keyString()) || h.format() != header.format() || h.dtype() != header.dtype()
                    || !h.shape().equals(header.shape()) || h.payloadLength() != length) {
                throw new CorruptChunkException(file, "its header on disk " + h + " no longer matches the expected " + header);
            }
            if (target.byteSize() < length) { // the header on disk is sound: the caller passed too small an object
                throw new IllegalArgumentException("cannot read chunk file " + file + " into " + dst + ": its payload is "
                        + length + " bytes, the object holds " + target.byteSize());
            }
            step = "reading the payload of";
            long got = readFully(ch, target.asSlice(0, body), ChunkFileHeader.BYTES);
            if (got != body) {
                throw new CorruptChunkException(file, "payload truncated at " + (ChunkFileHeader.BYTES + got) + " bytes");
            }
            if (tail != 0) {
                MemorySegment block = scratch.asSlice(ALIGN, ALIGN);
                if (readFully(ch, block, ChunkFileHeader.BYTES + body) < tail) {
                    throw new CorruptChunkException(file, "payload truncated in its last block");
                }
                MemorySegment.copy(block, 0, target, body, tail);
            }
            int crc = ChunkFileFormat.crc32c(target.asSlice(0, length));
            if (crc != h.crc32c()) {
                throw new CorruptChunkException(file, String.format("payload CRC32C mismatch: header %08x, data %08x",
                        h.crc32c(), crc));
            }
        } catch (IOException e) {
            throw new IOException("cannot read chunk file " + file + " (" + (direct ? "O_DIRECT" : "buffered") + "): "
                    + step + " it failed: " + describe(e), e);
        }
    }

    /**
     * Reads a whole chunk file and checks it against {@code expected}: its size, its header on disk,
     * the payload's CRC32C and the zero padding after the payload. Nothing is kept: the bytes stream
     * through {@code buffer} (with O_DIRECT when the constructor's probe allowed it, so a pass over
     * a large directory does not flood the page cache).
     *
     * @param buffer a 4 KiB-aligned segment, a multiple of 4 KiB long, that this call may overwrite
     * @throws CorruptChunkException on a checksum mismatch, a truncated file, non-zero padding, or a
     *                               header on disk that is unsound or differs from {@code expected}
     * @throws IOException           naming the file when it cannot be opened or read
     */
    public void verify(Path file, ChunkFileHeader expected, MemorySegment buffer) throws IOException, CorruptChunkException {
        if (buffer.byteSize() < ALIGN || buffer.byteSize() % ALIGN != 0 || buffer.address() % ALIGN != 0) {
            throw new IllegalArgumentException("a verify buffer must be 4 KiB-aligned and a multiple of 4 KiB, got "
                    + buffer.byteSize() + " bytes at address " + buffer.address());
        }
        boolean direct = directIo && buffer.isNative();
        String step = "opening";
        try (FileChannel ch = FileChannel.open(file, direct ? READ_DIRECT : READ_BUFFERED)) {
            step = "reading the size of";
            long size = ch.size();
            if (size != expected.fileBytes()) {
                throw new CorruptChunkException(file, "it is " + size + " bytes, its header says " + expected.fileBytes());
            }
            step = "reading the header of";
            MemorySegment head = buffer.asSlice(0, ALIGN);
            ChunkFileFormat.Parsed onDisk = ChunkFileFormat.decode(head, readFully(ch, head, 0));
            if (onDisk.verdict() != ChunkFileFormat.Verdict.VALID) {
                throw new CorruptChunkException(file, onDisk.reason());
            }
            if (!onDisk.header().equals(expected)) {
                throw new CorruptChunkException(file, "its header on disk " + onDisk.header() + " no longer matches the "
                        + "expected " + expected);
            }
            step = "reading the payload of";
            CRC32C crc = new CRC32C();
            long payloadLeft = expected.payloadLength();
            for (long pos = ChunkFileHeader.BYTES; pos < size; ) {
                MemorySegment block = buffer.asSlice(0, Math.min(buffer.byteSize(), size - pos));
                long got = readFully(ch, block, pos);
                if (got != block.byteSize()) {
                    throw new CorruptChunkException(file, "truncated at " + (pos + got) + " bytes while it was read");
                }
                long payload = Math.min(block.byteSize(), payloadLeft);
                crc.update(block.asSlice(0, payload).asByteBuffer());
                long padding = block.byteSize() - payload;
                if (padding > 0 && MemorySegment.mismatch(block, payload, block.byteSize(), ZEROS, 0, padding) != -1) {
                    throw new CorruptChunkException(file, "the padding after its payload is not zero");
                }
                payloadLeft -= payload;
                pos += block.byteSize();
            }
            if ((int) crc.getValue() != expected.crc32c()) {
                throw new CorruptChunkException(file, String.format("payload CRC32C mismatch: header %08x, data %08x",
                        expected.crc32c(), (int) crc.getValue()));
            }
        } catch (IOException e) {
            throw new IOException("cannot verify chunk file " + file + " (" + (direct ? "O_DIRECT" : "buffered") + "): "
                    + step + " it failed: " + describe(e), e);
        }
    }

    /**
     * Scans the directory after a start: keeps every complete chunk file whose header is sound and
     * deletes the cache's own files that are not (temp files of unfinished writes; files with the
     * chunk magic but a damaged, truncated or inconsistent header, or whose key does not parse or
     * does not match their name). Everything else (files without the magic whatever their name,
     * symlinks, directories) is foreign: left alone, counted, and reported in one WARNING line.
     * Payload checksums are not verified here ({@link #verify} does, and every read). Call before
     * any write: temp files of writes in progress would be deleted too.
     *
     * @throws IOException naming the directory or file when listing, reading or deleting fails
     */
    public RecoveryReport recover() throws IOException {
        List<RecoveredChunk> chunks = new ArrayList<>();
        int partial = 0;
        int corrupt = 0;
        int foreign = 0;
        List<String> foreignExamples = new ArrayList<>();
        String firstCorrupt = null;
        try (DirectoryStream<Path> entries = listing()) {
            for (Path file : entries) {
                String name = file.getFileName().toString();
                if (name.equals(ChunkDirectoryMarker.NAME)) {
                    continue;
                }
                Optional<BasicFileAttributes> found;
                try {
                    found = ChunkFileOwnership.attributes(file);
                } catch (IOException e) {
                    throw new IOException("cannot recover chunk directory " + directory + ": reading the attributes of "
                            + file + " failed: " + describe(e), e);
                }
                if (found.isEmpty()) {
                    continue; // gone since it was listed
                }
                BasicFileAttributes attrs = found.get();
                if (ChunkFileOwnership.isTempFile(file, attrs)) {
                    remove(file, "a partial write");
                    partial++;
                    continue;
                }
                ChunkFileFormat.Parsed parsed = attrs.isRegularFile() && name.endsWith(ChunkFileNames.SUFFIX)
                        ? inspectOrForeign(file)
                        : ChunkFileFormat.Parsed.foreign("not a regular file named *" + ChunkFileNames.SUFFIX);
                if (parsed.verdict() == ChunkFileFormat.Verdict.FOREIGN) {
                    LOG.log(System.Logger.Level.DEBUG, "leaving {0} alone: {1}", file, parsed.reason());
                    foreign++;
                    if (foreignExamples.size() < RecoveryReport.MAX_EXAMPLES) {
                        foreignExamples.add(name);
                    }
                    continue;
                }
                Checked checked = check(file, parsed, attrs);
                if (checked.problem() != null) {
                    remove(file, checked.problem());
                    if (corrupt++ == 0) {
                        firstCorrupt = name + ": " + checked.problem();
                    }
                    continue;
                }
                chunks.add(new RecoveredChunk(checked.key(), parsed.header(), file, attrs.size()));
            }
        } catch (DirectoryIteratorException e) {
            throw new IOException("cannot recover chunk directory " + directory + ": listing it failed: "
                    + describe(e.getCause()), e.getCause());
        }
        RecoveryReport report = new RecoveryReport(chunks, partial, corrupt, foreign, foreignExamples);
        logRecovery(report, firstCorrupt);
        return report;
    }

    /** A found chunk file's key, or what is wrong with it (then the key is null). */
    private record Checked(CacheKey key, String problem) {
    }

    /** Whether a file with the chunk magic is a whole chunk file of this cache, under the name its key gives. */
    private Checked check(Path file, ChunkFileFormat.Parsed parsed, BasicFileAttributes attrs) {
        if (parsed.verdict() == ChunkFileFormat.Verdict.CORRUPT) {
            return new Checked(null, parsed.reason());
        }
        CacheKey key;
        try {
            key = CacheKeys.parse(parsed.header().keyString());
        } catch (IllegalArgumentException e) {
            return new Checked(null, e.getMessage());
        }
        if (attrs.size() != parsed.header().fileBytes()) {
            return new Checked(null, "it is " + attrs.size() + " bytes, its header says " + parsed.header().fileBytes());
        }
        if (!pathFor(key).equals(file)) {
            return new Checked(null, "its name does not match its key '" + parsed.header().keyString() + "'");
        }
        return new Checked(key, null);
    }

    private void logRecovery(RecoveryReport report, String firstCorrupt) {
        int partial = report.removedPartial();
        int corrupt = report.removedCorrupt();
        int foreign = report.foreign();
        List<RecoveredChunk> chunks = report.chunks();
        LOG.log(System.Logger.Level.INFO, "chunk directory {0}: recovered {1} chunk files ({2} bytes); removed {3} partial "
                + "and {4} corrupt files; left {5} foreign entries alone", directory, chunks.size(), report.totalBytes(),
                partial, corrupt, foreign);
        if (corrupt > 0) {
            LOG.log(System.Logger.Level.WARNING, "chunk directory {0}: removed {1} corrupt chunk file(s) (the cache''s own: "
                    + "they carry its magic), for example {2}", directory, corrupt, firstCorrupt);
        }
        if (foreign > 0) {
            LOG.log(System.Logger.Level.WARNING, "chunk directory {0}: {1}; lmcache4j never deletes, overwrites or follows "
                    + "what it did not write, and they do not count toward max_local_disk_size", directory,
                    report.foreignSummary());
        }
    }

    /**
     * Deletes a chunk file if it is still the cache's (a regular file with the chunk magic); a file
     * already gone is not an error, and anything else at that name (a symlink, a file another
     * program put there) is left alone and logged.
     *
     * @return whether a file was deleted
     * @throws IOException naming the file when it is the cache's and cannot be deleted
     */
    public boolean delete(Path file) throws IOException {
        try {
            switch (ChunkFileOwnership.ofChunkFile(file)) {
                case ABSENT -> {
                    return false;
                }
                case FOREIGN -> {
                    LOG.log(System.Logger.Level.WARNING, "not deleting {0}: it is no longer an lmcache4j chunk file "
                            + "(a symlink, a directory or a file without the chunk magic now has its name)", file);
                    return false;
                }
                default -> {
                    return Files.deleteIfExists(file);
                }
            }
        } catch (IOException e) {
            throw new IOException("cannot delete chunk file " + file + ": " + describe(e), e);
        }
    }

    private DirectoryStream<Path> listing() throws IOException {
        try {
            return Files.newDirectoryStream(directory);
        } catch (IOException e) {
            throw new IOException("cannot recover chunk directory " + directory + ": listing it failed: " + describe(e), e);
        }
    }

    private void remove(Path file, String why) throws IOException {
        LOG.log(System.Logger.Level.DEBUG, "removing {0} from the chunk directory: {1}", file, why);
        try {
            Files.deleteIfExists(file);
        } catch (IOException e) {
            throw new IOException("cannot recover chunk directory " + directory + ": deleting " + file + " (" + why
                    + ") failed: " + describe(e), e);
        }
    }

    /** Writes all of {@code src} at {@code position}, in transfers a ByteBuffer can hold. */
    private static void writeFully(FileChannel ch, MemorySegment src, long position) throws IOException {
        long done = 0;
        long size = src.byteSize();
        while (done < size) {
            var bb = src.asSlice(done, Math.min(size - done, MAX_TRANSFER)).asByteBuffer();
            while (bb.hasRemaining()) {
                int n = ch.write(bb, position + done);
                done += n;
            }
        }
    }

    /** Reads into {@code dst} from {@code position} until it is full or the file ends; returns the bytes read. */
    private static long readFully(FileChannel ch, MemorySegment dst, long position) throws IOException {
        long done = 0;
        long size = dst.byteSize();
        while (done < size) {
            var bb = dst.asSlice(done, Math.min(size - done, MAX_TRANSFER)).asByteBuffer();
            while (bb.hasRemaining()) {
                int n = ch.read(bb, position + done);
                if (n < 0) {
                    return done;
                }
                done += n;
            }
        }
        return done;
    }

    /** An exception as "Type: message", which for file-system errors names the file and the errno text. */
    /** Why creating a directory failed, in words, without repeating the path the message already names. */
    private static String reason(IOException e) {
        return switch (e) {
            case java.nio.file.FileAlreadyExistsException x -> "a file is in the way";
            case java.nio.file.NoSuchFileException x -> "no such file or directory (can a directory be made there?)";
            case java.nio.file.AccessDeniedException x -> "permission denied";
            case java.nio.file.FileSystemException x when x.getReason() != null -> x.getReason();
            default -> describe(e);
        };
    }

    private static String describe(Throwable e) {
        String msg = e.getMessage();
        return e.getClass().getSimpleName() + (msg == null ? "" : ": " + msg);
    }
}
