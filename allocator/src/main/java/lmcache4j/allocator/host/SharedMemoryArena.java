package lmcache4j.allocator.host;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.EnumSet;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;

import lmcache4j.cuda.CudaRuntime;
import lmcache4j.cuda.HostRegisterFlags;
import lmcache4j.cuda.HostRegistration;
import lmcache4j.cuda.posix.Posix;
import lmcache4j.cuda.posix.PosixException;

/**
 * A {@link HostArena} that other processes can open by name: one POSIX shared-memory file
 * {@code /dev/shm/<name>} mapped read-write. The multiprocess server makes its CPU tier of one of
 * these so that workers copy KV chunks straight into it (Python's {@code SharedMemory(name)} opens
 * the same file), with no bytes on the socket.
 *
 * <p>The file is created exclusively and with mode 0600 from the first instant (the mode is given
 * to {@code open(2)}, never {@code chmod}ed later), so no other user can open it and a name already
 * in use is refused rather than shared. Every page is backed at creation, so a full {@code /dev/shm}
 * is an error then, never a SIGBUS later. Closing unregisters it from CUDA (when registered), unmaps
 * it and unlinks the file; a start that fails part way leaves no file behind.
 */
public final class SharedMemoryArena implements HostArena {
    /** Where Linux keeps POSIX shared memory: what {@code shm_open("/name")} opens. */
    public static final Path DEV_SHM = Path.of("/dev/shm");
    /** The longest name accepted (NAME_MAX is 255; this leaves room for prefixes others add). */
    public static final int MAX_NAME_LENGTH = 200;

    private final String name;
    private final Path file;
    private final Arena mapArena;
    private final MemorySegment segment;
    private final HostRegistration registration;
    private final AtomicBoolean closed = new AtomicBoolean();

    private SharedMemoryArena(String name, Path file, Arena mapArena, MemorySegment segment, HostRegistration registration) {
        this.name = name;
        this.file = file;
        this.mapArena = mapArena;
        this.segment = segment;
        this.registration = registration;
    }

    /** Creates {@code /dev/shm/<name>} of {@code bytes}, not registered with CUDA. */
    public static SharedMemoryArena create(String name, long bytes) {
        return create(DEV_SHM, name, bytes, segment -> null);
    }

    /**
     * Creates {@code /dev/shm/<name>} of {@code bytes} and, when {@code cuda} is usable, registers
     * the whole mapping with {@code cudaHostRegister(PORTABLE)} so device copies from it run at
     * pinned speed. A {@code null} or unavailable runtime leaves it unregistered.
     */
    public static SharedMemoryArena create(String name, long bytes, CudaRuntime cuda) {
        boolean usable = cuda != null && cuda.isAvailable();
        return create(DEV_SHM, name, bytes, segment -> usable ? cuda.registerHost(segment, HostRegisterFlags.PORTABLE) : null);
    }

    /**
     * Creates {@code directory/name} of {@code bytes}, then hands the mapping to {@code register},
     * which returns a registration to undo at close, or {@code null}. Everything done is undone
     * when a step throws.
     */
    static SharedMemoryArena create(Path directory, String name, long bytes, Function<MemorySegment, HostRegistration> register) {
        checkName(name);
        if (bytes <= 0) {
            throw new IllegalArgumentException("shared memory size must be positive, was " + bytes);
        }
        checkFreeSpace(directory, name, bytes);
        Path file = directory.resolve(name);
        FileChannel channel;
        try {
            channel = FileChannel.open(file, EnumSet.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.READ,
                    StandardOpenOption.WRITE), PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        } catch (FileAlreadyExistsException e) {
            throw new IllegalStateException("shared memory '" + name + "' already exists (" + file
                    + "): another server uses it, or a crashed one left it; remove it or pick another name", e);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create shared memory " + file + ": " + e.getMessage(), e);
        }
        Arena mapArena = Arena.ofShared();
        HostRegistration registration = null;
        try (channel) {
            MemorySegment segment = channel.map(FileChannel.MapMode.READ_WRITE, 0, bytes, mapArena); // grows the file to size
            reserve(segment, file);
            registration = register.apply(segment);
            return new SharedMemoryArena(name, file, mapArena, segment, registration);
        } catch (IOException e) {
            undo(registration, mapArena, file, e);
            throw new UncheckedIOException("cannot map shared memory " + file + " of " + bytes + " bytes: " + e.getMessage(), e);
        } catch (RuntimeException | Error e) {
            undo(registration, mapArena, file, e);
            throw e;
        }
    }

    /**
     * Backs every page now ({@code MADV_POPULATE_WRITE}): a tmpfs that another process filled after
     * the free-space check is then an error here, instead of a SIGBUS that would kill the process at
     * its first write to an unbacked page. A kernel older than 5.14 cannot, and the pages are then
     * backed as they are first written.
     */
    private static void reserve(MemorySegment segment, Path file) {
        try {
            Posix.madvise(segment, Posix.MADV_POPULATE_WRITE);
        } catch (PosixException e) {
            if (e.errno() == Posix.EINVAL) {
                return; // a kernel without MADV_POPULATE_WRITE
            }
            throw new IllegalStateException("cannot back shared memory " + file + " of " + segment.byteSize()
                    + " bytes (" + e.errnoName() + "): its file system is full; enlarge it (e.g. docker --shm-size) or"
                    + " shrink the pool", e);
        }
    }

    /** Undoes a start that failed part way: no registration, no mapping, no file. */
    private static void undo(HostRegistration registration, Arena mapArena, Path file, Throwable cause) {
        try {
            if (registration != null) {
                registration.close();
            }
            mapArena.close();
        } catch (RuntimeException e) {
            cause.addSuppressed(e);
        } finally {
            try {
                Files.deleteIfExists(file);
            } catch (IOException e) {
                cause.addSuppressed(e);
            }
        }
    }

    /**
     * Refuses names that would leave {@code /dev/shm} or that a peer could not open: empty, with
     * {@code /}, NUL, {@code ..}, only dots, or longer than {@link #MAX_NAME_LENGTH}.
     */
    static void checkName(String name) {
        if (name == null || name.isEmpty()) {
            throw new IllegalArgumentException("shared memory name must not be empty");
        }
        if (name.length() > MAX_NAME_LENGTH) {
            throw new IllegalArgumentException("shared memory name is " + name.length() + " characters, at most "
                    + MAX_NAME_LENGTH + " allowed");
        }
        if (name.indexOf('/') >= 0 || name.indexOf('\0') >= 0 || name.contains("..") || name.equals(".")) {
            throw new IllegalArgumentException("shared memory name '" + name.replace("\0", "\\0")
                    + "' must be a plain file name: no '/', NUL or '..'");
        }
    }

    private static void checkFreeSpace(Path directory, String name, long bytes) {
        long free;
        try {
            free = Files.getFileStore(directory).getUsableSpace();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the free space of " + directory + ": " + e.getMessage(), e);
        }
        if (bytes > free) {
            throw new IllegalStateException("shared memory '" + name + "' needs " + bytes + " bytes ("
                    + HostArenas.formatBytes(bytes) + ") but " + directory + " has only " + free + " bytes ("
                    + HostArenas.formatBytes(free) + ") free; enlarge it (e.g. docker --shm-size) or shrink the pool");
        }
    }

    /** The name peers open it by: no leading slash, as Python's {@code SharedMemory(name)} takes it. */
    public String name() {
        return name;
    }

    /** The file backing it, {@code /dev/shm/<name>}. */
    public Path path() {
        return file;
    }

    @Override
    public MemorySegment segment() {
        return segment;
    }

    @Override
    public long byteSize() {
        return segment.byteSize();
    }

    @Override
    public Kind kind() {
        return registration != null ? Kind.CUDA_REGISTERED_SHARED_MEMORY : Kind.SHARED_MEMORY;
    }

    @Override
    public String description() {
        return "shared memory " + file + " " + HostArenas.formatBytes(byteSize())
                + (registration != null ? ", cudaHostRegister in " + registration.pieceCount() + " piece(s)" : "");
    }

    /**
     * Unregisters, unmaps and unlinks. Idempotent. Peers that still map the file keep their
     * mapping until they close it (POSIX semantics); no new peer can open the name.
     */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        try {
            if (registration != null) {
                registration.close();
            }
        } finally {
            try {
                mapArena.close();
            } finally {
                try {
                    Files.deleteIfExists(file);
                } catch (IOException e) {
                    throw new UncheckedIOException("cannot unlink shared memory " + file + ": " + e.getMessage(), e);
                }
            }
        }
    }

    @Override
    public String toString() {
        return "HostArena[" + description() + "]";
    }
}
