package lmcache4j.cuda;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;

import lmcache4j.cuda.internal.CudartLibrary;
import lmcache4j.cuda.internal.cudart.cudaIpcMemHandle_st;
import lmcache4j.cuda.internal.cudart.cudaMemcpyAttributes;
import lmcache4j.cuda.internal.cudart.cudaPointerAttributes;
import lmcache4j.cuda.internal.cudart.cudart_h;

/**
 * The CUDA runtime ({@code libcudart}), bound through jextract-generated code and loaded without
 * ever throwing: asking for it on a machine with no CUDA gives a runtime whose {@link #status()}
 * is {@link CudaStatus.Unavailable} with the reason.
 *
 * <p>Operations need the library to be loaded, not a device: on a machine whose driver is missing
 * they make the call and throw the {@link CudaException} the runtime answers (for example
 * {@code cudaErrorInsufficientDriver}). Without the library they throw
 * {@link CudaUnavailableException}. Use {@link #isAvailable()} to choose a device path.
 *
 * <p>Thread-safety: every method may be called from any thread. As in CUDA itself the current
 * device ({@link #setDevice}) is a property of the calling thread.
 */
public final class CudaRuntime {
    /** Drivers refuse {@code cudaHostRegister} of more than this many bytes in one call. */
    public static final long MAX_REGISTRATION_BYTES = 64L << 30;

    private final CudaStatus status;

    private CudaRuntime(CudaStatus status) {
        this.status = status;
    }

    private static final class Default {
        static final CudaRuntime INSTANCE = probe(CudartLibrary.loadDefault());
    }

    /**
     * The process's runtime, loaded once from the first of: system property {@code lmcache4j.cudart},
     * environment variable {@code LMCACHE_CUDART}, {@code java.library.path}, {@code CUDA_HOME},
     * {@code /usr/local/cuda/lib64} and the distribution's library directories.
     */
    public static CudaRuntime load() {
        return Default.INSTANCE;
    }

    /** The runtime from the library file at {@code library}; unavailable if it is missing or unusable. */
    public static CudaRuntime load(Path library) {
        return probe(CudartLibrary.load(Objects.requireNonNull(library, "library")));
    }

    private static CudaRuntime probe(CudartLibrary.Outcome outcome) {
        return new CudaRuntime(switch (outcome) {
            case CudartLibrary.NotFound nf -> new CudaStatus.Unavailable(CudaStatus.Reason.LIBRARY_NOT_FOUND,
                    "no libcudart at " + String.join(", ", nf.lookedAt()), Optional.empty(), Optional.empty(),
                    OptionalInt.empty());
            case CudartLibrary.NotLoadable nl -> new CudaStatus.Unavailable(CudaStatus.Reason.LIBRARY_UNUSABLE,
                    nl.path() + " could not be loaded: " + nl.loaderMessage(), Optional.empty(), Optional.empty(),
                    OptionalInt.empty());
            case CudartLibrary.Incompatible in -> new CudaStatus.Unavailable(CudaStatus.Reason.LIBRARY_UNUSABLE,
                    in.path() + " lacks " + in.missingSymbols() + " (lmcache4j needs CUDA 12 or newer)",
                    Optional.empty(), Optional.of(in.path()), OptionalInt.empty());
            case CudartLibrary.Conflict c -> new CudaStatus.Unavailable(CudaStatus.Reason.LIBRARY_CONFLICT,
                    "asked for " + c.requested() + " but " + c.alreadyLoaded() + " is already bound in this process",
                    Optional.empty(), Optional.of(c.alreadyLoaded()), OptionalInt.empty());
            case CudartLibrary.Loaded loaded -> probeDevices(loaded.path());
        });
    }

    private static CudaStatus probeDevices(Path library) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ValueLayout.JAVA_INT);
            int runtimeVersion = cudart_h.cudaRuntimeGetVersion(out) == 0 ? out.get(ValueLayout.JAVA_INT, 0) : 0;
            int driverVersion = cudart_h.cudaDriverGetVersion(out) == 0 ? out.get(ValueLayout.JAVA_INT, 0) : 0;
            int rc = cudart_h.cudaGetDeviceCount(out);
            if (rc == CudaError.SUCCESS && out.get(ValueLayout.JAVA_INT, 0) > 0) {
                return new CudaStatus.Available(library, runtimeVersion, driverVersion, out.get(ValueLayout.JAVA_INT, 0));
            }
            CudaStatus.Reason reason = switch (rc) {
                case CudaError.SUCCESS, CudaError.NO_DEVICE -> CudaStatus.Reason.NO_DEVICE;
                case CudaError.INSUFFICIENT_DRIVER -> CudaStatus.Reason.DRIVER_MISSING;
                default -> CudaStatus.Reason.INITIALIZATION_FAILED;
            };
            Optional<CudaError> error = rc == CudaError.SUCCESS ? Optional.empty() : Optional.of(decode(rc));
            String detail = error.map(CudaError::toString).orElse("cudaGetDeviceCount reports 0 devices");
            // cudaGetDeviceCount's failure is sticky in the per-thread last error: clear it.
            cudart_h.cudaGetLastError();
            return new CudaStatus.Unavailable(reason, detail, error, Optional.of(library), OptionalInt.of(runtimeVersion));
        }
    }

    /** Decodes an error code with the runtime's own name and text. Needs the library loaded. */
    static CudaError decode(int code) {
        MemorySegment name = cudart_h.cudaGetErrorName(code);
        MemorySegment text = cudart_h.cudaGetErrorString(code);
        return new CudaError(code,
                name.equals(MemorySegment.NULL) ? "cudaError" + code : name.getString(0),
                text.equals(MemorySegment.NULL) ? "unknown error" : text.getString(0));
    }

    /** {@code 13000} as {@code "13.0"}; {@code 0} as {@code "none"}. */
    static String versionString(int version) {
        return version <= 0 ? "none" : (version / 1000) + "." + (version % 1000) / 10;
    }

    /** Whether device work can run here. */
    public boolean isAvailable() {
        return status.isAvailable();
    }

    /** Whether the library is bound, so that calls can be made (even if they fail for want of a driver). */
    public boolean isLoaded() {
        return status instanceof CudaStatus.Available
                || (status instanceof CudaStatus.Unavailable u && u.library().isPresent()
                && u.reason() != CudaStatus.Reason.LIBRARY_UNUSABLE && u.reason() != CudaStatus.Reason.LIBRARY_CONFLICT);
    }

    /** Available, with versions and device count; or unavailable, with the reason. */
    public CudaStatus status() {
        return status;
    }

    /** The runtime's version, for example 13000, if the library is loaded. */
    public OptionalInt runtimeVersion() {
        return switch (status) {
            case CudaStatus.Available a -> OptionalInt.of(a.runtimeVersion());
            case CudaStatus.Unavailable u -> u.runtimeVersion();
        };
    }

    /** Decodes {@code code} with the runtime's name and message for it. */
    public CudaError error(int code) {
        requireLoaded("cudaGetErrorName");
        return decode(code);
    }

    void check(int rc, String call) {
        if (rc != CudaError.SUCCESS) {
            throw new CudaException(call, decode(rc));
        }
    }

    void requireLoaded(String operation) {
        if (!isLoaded()) {
            throw new CudaUnavailableException(operation, (CudaStatus.Unavailable) status);
        }
    }

    // ---- devices ----------------------------------------------------------------------------

    /** Devices visible to this process ({@code cudaGetDeviceCount}). */
    public int deviceCount() {
        requireLoaded("cudaGetDeviceCount");
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ValueLayout.JAVA_INT);
            check(cudart_h.cudaGetDeviceCount(out), "cudaGetDeviceCount()");
            return out.get(ValueLayout.JAVA_INT, 0);
        }
    }

    /** Makes {@code device} current for the calling thread ({@code cudaSetDevice}). */
    public void setDevice(int device) {
        requireLoaded("cudaSetDevice");
        check(cudart_h.cudaSetDevice(device), "cudaSetDevice(" + device + ")");
    }

    /** The calling thread's current device ({@code cudaGetDevice}). */
    public int currentDevice() {
        requireLoaded("cudaGetDevice");
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ValueLayout.JAVA_INT);
            check(cudart_h.cudaGetDevice(out), "cudaGetDevice()");
            return out.get(ValueLayout.JAVA_INT, 0);
        }
    }

    /** The driver's version, 0 when no driver is installed ({@code cudaDriverGetVersion}). */
    public int driverVersion() {
        requireLoaded("cudaDriverGetVersion");
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ValueLayout.JAVA_INT);
            check(cudart_h.cudaDriverGetVersion(out), "cudaDriverGetVersion()");
            return out.get(ValueLayout.JAVA_INT, 0);
        }
    }

    /** Free and total memory of the current device ({@code cudaMemGetInfo}). */
    public DeviceMemoryInfo memoryInfo() {
        requireLoaded("cudaMemGetInfo");
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment free = arena.allocate(ValueLayout.JAVA_LONG);
            MemorySegment total = arena.allocate(ValueLayout.JAVA_LONG);
            check(cudart_h.cudaMemGetInfo(free, total), "cudaMemGetInfo()");
            return new DeviceMemoryInfo(free.get(ValueLayout.JAVA_LONG, 0), total.get(ValueLayout.JAVA_LONG, 0));
        }
    }

    /** Waits for all work on the current device ({@code cudaDeviceSynchronize}). */
    public void deviceSynchronize() {
        requireLoaded("cudaDeviceSynchronize");
        check(cudart_h.cudaDeviceSynchronize(), "cudaDeviceSynchronize()");
    }

    /** Returns and clears the calling thread's last runtime error ({@code cudaGetLastError}). */
    public CudaError lastError() {
        requireLoaded("cudaGetLastError");
        return decode(cudart_h.cudaGetLastError());
    }

    // ---- memory -----------------------------------------------------------------------------

    /** Allocates {@code bytes} of device memory on the current device ({@code cudaMalloc}). */
    public DeviceBuffer allocateDevice(long bytes) {
        requirePositive("device allocation size", bytes);
        requireLoaded("cudaMalloc");
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ValueLayout.ADDRESS);
            check(cudart_h.cudaMalloc(out, bytes), "cudaMalloc(" + bytes + ")");
            return new DeviceBuffer(this, out.get(ValueLayout.ADDRESS, 0), bytes);
        }
    }

    /**
     * Allocates {@code bytes} of page-locked host memory ({@code cudaHostAlloc}).
     *
     * @param flags a combination of {@link HostAllocFlags} values
     */
    public PinnedHostBuffer allocatePinned(long bytes, int flags) {
        requirePositive("pinned allocation size", bytes);
        requireLoaded("cudaHostAlloc");
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ValueLayout.ADDRESS);
            check(cudart_h.cudaHostAlloc(out, bytes, flags), "cudaHostAlloc(" + bytes + ", flags=" + flags + ")");
            return new PinnedHostBuffer(this, out.get(ValueLayout.ADDRESS, 0), bytes);
        }
    }

    /**
     * Page-locks an existing host region for DMA ({@code cudaHostRegister}), in pieces of at most
     * {@link #MAX_REGISTRATION_BYTES}. All or nothing: when a piece fails, those already registered
     * are unregistered before the exception is thrown.
     *
     * @param flags a combination of {@link HostRegisterFlags} values
     */
    public HostRegistration registerHost(MemorySegment region, int flags) {
        return registerHost(region, flags, MAX_REGISTRATION_BYTES);
    }

    HostRegistration registerHost(MemorySegment region, int flags, long pieceBytes) {
        Objects.requireNonNull(region, "region");
        if (!region.isNative()) {
            throw new IllegalArgumentException("only native (off-heap) memory can be registered, got a heap segment");
        }
        requirePositive("registered region size", region.byteSize());
        requireLoaded("cudaHostRegister");
        List<MemorySegment> pieces = HostRegistration.split(region, pieceBytes);
        for (int i = 0; i < pieces.size(); i++) {
            MemorySegment piece = pieces.get(i);
            int rc = cudart_h.cudaHostRegister(piece, piece.byteSize(), flags);
            if (rc != CudaError.SUCCESS) {
                for (int j = 0; j < i; j++) {
                    cudart_h.cudaHostUnregister(pieces.get(j));
                }
                throw new CudaException("cudaHostRegister(0x" + Long.toHexString(piece.address()) + ", "
                        + piece.byteSize() + ", flags=" + flags + ") [piece " + (i + 1) + " of " + pieces.size() + "]",
                        decode(rc));
            }
        }
        return new HostRegistration(this, region, pieces);
    }

    /** The device address of mapped pinned host memory ({@code cudaHostGetDevicePointer}). */
    public MemorySegment hostDevicePointer(MemorySegment host) {
        requireLoaded("cudaHostGetDevicePointer");
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ValueLayout.ADDRESS);
            check(cudart_h.cudaHostGetDevicePointer(out, host, 0),
                    "cudaHostGetDevicePointer(0x" + Long.toHexString(host.address()) + ")");
            return out.get(ValueLayout.ADDRESS, 0);
        }
    }

    /** What the runtime knows of a pointer ({@code cudaPointerGetAttributes}). */
    public PointerAttributes pointerAttributes(MemorySegment pointer) {
        requireLoaded("cudaPointerGetAttributes");
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment attrs = arena.allocate(cudaPointerAttributes.layout());
            check(cudart_h.cudaPointerGetAttributes(attrs, pointer),
                    "cudaPointerGetAttributes(0x" + Long.toHexString(pointer.address()) + ")");
            return new PointerAttributes(MemoryType.of(cudaPointerAttributes.type(attrs)),
                    cudaPointerAttributes.device(attrs),
                    cudaPointerAttributes.devicePointer(attrs).address(),
                    cudaPointerAttributes.hostPointer(attrs).address());
        }
    }

    // ---- copies -----------------------------------------------------------------------------

    /** Synchronous copy of {@code bytes} ({@code cudaMemcpy}). */
    public void memcpy(MemorySegment dst, MemorySegment src, long bytes, MemcpyKind kind) {
        requireLoaded("cudaMemcpy");
        check(cudart_h.cudaMemcpy(dst, src, bytes, kind.code()), "cudaMemcpy(" + bytes + " bytes, " + kind + ")");
    }

    /** Asynchronous copy of {@code bytes} on {@code stream} ({@code cudaMemcpyAsync}). */
    public void memcpyAsync(MemorySegment dst, MemorySegment src, long bytes, MemcpyKind kind, CudaStream stream) {
        requireLoaded("cudaMemcpyAsync");
        check(cudart_h.cudaMemcpyAsync(dst, src, bytes, kind.code(), stream.handle()),
                "cudaMemcpyAsync(" + bytes + " bytes, " + kind + ")");
    }

    /**
     * Asynchronous strided copy of {@code height} rows of {@code width} bytes
     * ({@code cudaMemcpy2DAsync}); pitches are the byte distances between row starts.
     */
    public void memcpy2DAsync(MemorySegment dst, long dstPitch, MemorySegment src, long srcPitch,
                              long width, long height, MemcpyKind kind, CudaStream stream) {
        if (width > dstPitch || width > srcPitch) {
            throw new IllegalArgumentException("row width " + width + " exceeds a pitch (dst " + dstPitch + ", src " + srcPitch + ")");
        }
        requireLoaded("cudaMemcpy2DAsync");
        check(cudart_h.cudaMemcpy2DAsync(dst, dstPitch, src, srcPitch, width, height, kind.code(), stream.handle()),
                "cudaMemcpy2DAsync(" + height + " rows of " + width + " bytes, " + kind + ")");
    }

    /** Whether {@link #memcpyBatchAsync} may be called: a loaded runtime of CUDA 13 or later (its signature). */
    public boolean hasBatchCopies() {
        return isLoaded() && runtimeVersion().orElse(0) >= BATCH_COPIES_SINCE;
    }

    /** The first runtime whose {@code cudaMemcpyBatchAsync} has the signature bound here (CUDA 13.0). */
    static final int BATCH_COPIES_SINCE = 13000;

    /**
     * {@code count} asynchronous copies in one call ({@code cudaMemcpyBatchAsync}): copy i moves
     * {@code sizes[i]} bytes from {@code srcs[i]} to {@code dsts[i]}, the three native arrays of
     * 8-byte words (addresses, sizes), read during the call. Sources are read in stream order; the
     * runtime infers each direction from the pointers (unified addressing), so host memory must be
     * pinned or registered. One call instead of {@code count} is what makes many small copies
     * (a paged cache's blocks) reach the link's bandwidth.
     *
     * @throws IllegalStateException when {@link #hasBatchCopies()} is false
     */
    public void memcpyBatchAsync(MemorySegment dsts, MemorySegment srcs, MemorySegment sizes, long count, CudaStream stream) {
        requireLoaded("cudaMemcpyBatchAsync");
        if (!hasBatchCopies()) {
            throw new IllegalStateException("cudaMemcpyBatchAsync needs a CUDA 13 runtime, this one is " + runtimeVersion());
        }
        long bytes = count * Long.BYTES;
        if (count < 1 || dsts.byteSize() < bytes || srcs.byteSize() < bytes || sizes.byteSize() < bytes) {
            throw new IllegalArgumentException(count + " copies need arrays of " + bytes + " bytes: dsts " + dsts.byteSize()
                    + ", srcs " + srcs.byteSize() + ", sizes " + sizes.byteSize());
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment attrs = arena.allocate(cudaMemcpyAttributes.layout());
            cudaMemcpyAttributes.srcAccessOrder(attrs, cudart_h.cudaMemcpySrcAccessOrderStream());
            cudaMemcpyAttributes.flags(attrs, cudart_h.cudaMemcpyFlagDefault());
            MemorySegment firstIndex = arena.allocate(ValueLayout.JAVA_LONG); // attrs[0] applies from copy 0 on
            check(cudart_h.cudaMemcpyBatchAsync(dsts, srcs, sizes, count, attrs, firstIndex, 1, stream.handle()),
                    "cudaMemcpyBatchAsync(" + count + " copies)");
        }
    }

    /** Asynchronously sets {@code bytes} of device memory to {@code value} ({@code cudaMemsetAsync}). */
    public void memsetAsync(MemorySegment dst, int value, long bytes, CudaStream stream) {
        requireLoaded("cudaMemsetAsync");
        check(cudart_h.cudaMemsetAsync(dst, value, bytes, stream.handle()), "cudaMemsetAsync(" + bytes + " bytes)");
    }

    // ---- streams and events -----------------------------------------------------------------

    /**
     * Creates a stream ({@code cudaStreamCreateWithFlags}).
     *
     * @param nonBlocking whether it should not synchronise with the legacy default stream
     */
    public CudaStream createStream(boolean nonBlocking) {
        requireLoaded("cudaStreamCreateWithFlags");
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ValueLayout.ADDRESS);
            int flags = nonBlocking ? cudart_h.cudaStreamNonBlocking() : 0;
            check(cudart_h.cudaStreamCreateWithFlags(out, flags), "cudaStreamCreateWithFlags(" + flags + ")");
            return new CudaStream(this, out.get(ValueLayout.ADDRESS, 0));
        }
    }

    /**
     * Creates an event ({@code cudaEventCreateWithFlags}).
     *
     * @param timing whether it records time; events without timing are cheaper to synchronise on
     */
    public CudaEvent createEvent(boolean timing) {
        requireLoaded("cudaEventCreateWithFlags");
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ValueLayout.ADDRESS);
            int flags = timing ? cudart_h.cudaEventDefault() : cudart_h.cudaEventDisableTiming();
            check(cudart_h.cudaEventCreateWithFlags(out, flags), "cudaEventCreateWithFlags(" + flags + ")");
            return new CudaEvent(this, out.get(ValueLayout.ADDRESS, 0));
        }
    }

    // ---- IPC --------------------------------------------------------------------------------

    /** An IPC handle another process can open to map {@code device}'s memory ({@code cudaIpcGetMemHandle}). */
    public IpcMemHandle ipcHandle(DeviceBuffer device) {
        requireLoaded("cudaIpcGetMemHandle");
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment handle = arena.allocate(cudaIpcMemHandle_st.layout());
            check(cudart_h.cudaIpcGetMemHandle(handle, device.pointer()), "cudaIpcGetMemHandle(" + device + ")");
            return new IpcMemHandle(handle.toArray(ValueLayout.JAVA_BYTE));
        }
    }

    /**
     * Maps memory another process exported ({@code cudaIpcOpenMemHandle} with
     * {@code cudaIpcMemLazyEnablePeerAccess}). Close the mapping to unmap it.
     */
    public IpcMapping openIpcHandle(IpcMemHandle handle) {
        requireLoaded("cudaIpcOpenMemHandle");
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ValueLayout.ADDRESS);
            MemorySegment raw = arena.allocate(cudaIpcMemHandle_st.layout());
            MemorySegment.copy(handle.bytes(), 0, raw, ValueLayout.JAVA_BYTE, 0, IpcMemHandle.SIZE);
            check(cudart_h.cudaIpcOpenMemHandle(out, raw, cudart_h.cudaIpcMemLazyEnablePeerAccess()),
                    "cudaIpcOpenMemHandle(" + handle + ")");
            return new IpcMapping(this, out.get(ValueLayout.ADDRESS, 0));
        }
    }

    private static void requirePositive(String what, long value) {
        if (value <= 0) {
            throw new IllegalArgumentException(what + " must be positive, was " + value);
        }
    }

    @Override
    public String toString() {
        return "CudaRuntime[" + status + "]";
    }
}
