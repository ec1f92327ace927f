package lmcache4j.bench.gpu;

import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.SplittableRandom;
import java.util.function.Supplier;

import lmcache4j.allocator.HostArenaOptions;
import lmcache4j.allocator.host.HostArena;
import lmcache4j.cuda.CudaError;
import lmcache4j.cuda.CudaEvent;
import lmcache4j.cuda.CudaException;
import lmcache4j.cuda.CudaRuntime;
import lmcache4j.cuda.CudaStatus;
import lmcache4j.cuda.CudaStream;
import lmcache4j.cuda.DeviceBuffer;
import lmcache4j.cuda.DeviceMemoryInfo;
import lmcache4j.cuda.HostAllocFlags;
import lmcache4j.cuda.HostRegisterFlags;
import lmcache4j.cuda.HostRegistration;
import lmcache4j.cuda.MemcpyKind;
import lmcache4j.cuda.MemoryType;
import lmcache4j.cuda.PinnedHostBuffer;
import lmcache4j.cuda.PointerAttributes;
import lmcache4j.cuda.posix.AnonymousMapping;

/**
 * Proves lmcache4j's CUDA paths on this machine's GPU, one step at a time, each checked against
 * bytes read back: device and pinned allocations and what the runtime says of their pointers,
 * synchronous, asynchronous, strided and memset copies, host registration, CUDA-pinned host arenas,
 * an IPC handle opened by a second process, the runtime's error decoding, copy bandwidth, and the
 * engine storing a paged KV cache in device memory and retrieving it into another
 * ({@link EngineOnGpu}). A failed step is reported and the next one still runs.
 */
public final class CudaCheck {
    /** One step's outcome. */
    public record Step(String name, boolean passed, String detail) {
    }

    /** Every step, in order; {@code available} is false when no step could run (no usable device). */
    public record Report(CudaStatus status, boolean available, List<Step> steps, EngineOnGpu.Result engine) {
        /** Whether CUDA was usable and every step passed. */
        public boolean passed() {
            return available && steps.stream().allMatch(Step::passed);
        }
    }

    static final long MIB = 1L << 20;

    private final CudaRuntime cuda;
    private final int tokens;
    private final int runs;
    private final PrintStream progress;
    private final List<Step> steps = new ArrayList<>();

    private CudaCheck(CudaRuntime cuda, int tokens, int runs, PrintStream progress) {
        this.cuda = cuda;
        this.tokens = tokens;
        this.runs = runs;
        this.progress = progress;
    }

    /**
     * Runs every step on device 0 of {@code cuda}; the engine step stores and retrieves
     * {@code tokens} tokens {@code runs} times. Progress lines go to {@code progress}.
     */
    public static Report run(CudaRuntime cuda, int tokens, int runs, PrintStream progress) {
        Objects.requireNonNull(cuda, "cuda");
        if (tokens < 256 || tokens % 256 != 0) {
            throw new IllegalArgumentException("tokens must be a positive multiple of 256, was " + tokens);
        }
        if (runs < 1) {
            throw new IllegalArgumentException("runs must be at least 1, was " + runs);
        }
        if (!cuda.isAvailable()) {
            return new Report(cuda.status(), false, List.of(), null);
        }
        return new CudaCheck(cuda, tokens, runs, progress).runAll();
    }

    private Report runAll() {
        cuda.setDevice(0);
        step("runtime", this::runtime);
        step("device-memory", this::deviceMemory);
        step("pinned-memory", this::pinnedMemory);
        step("copies", this::copies);
        step("strided-copy", this::stridedCopy);
        step("batch-copy", this::batchCopy);
        step("host-registration", this::hostRegistration);
        step("host-arenas", this::hostArenas);
        step("ipc", () -> IpcPeer.check(cuda));
        step("bandwidth", this::bandwidth);
        EngineOnGpu.Result[] engine = new EngineOnGpu.Result[1];
        step("engine", () -> {
            engine[0] = EngineOnGpu.run(cuda, tokens, runs, progress);
            return engine[0].summary();
        });
        step("errors", this::errors); // last: a runtime that mishandled an error would fail the steps after it
        return new Report(cuda.status(), true, List.copyOf(steps), engine[0]);
    }

    private void step(String name, Supplier<String> body) {
        progress.println("cuda-check: " + name + " ...");
        Step step;
        try {
            step = new Step(name, true, body.get());
        } catch (RuntimeException | AssertionError e) {
            step = new Step(name, false, e.getClass().getSimpleName() + ": " + e.getMessage());
        }
        steps.add(step);
        progress.println("cuda-check: " + (step.passed() ? "PASS " : "FAIL ") + name + ": " + step.detail());
    }

    private String runtime() {
        DeviceMemoryInfo memory = cuda.memoryInfo();
        require(cuda.deviceCount() > 0, "no device counted");
        require(cuda.driverVersion() >= cuda.runtimeVersion().orElseThrow(),
                "driver " + cuda.driverVersion() + " older than runtime " + cuda.runtimeVersion().orElseThrow());
        return "runtime " + version(cuda.runtimeVersion().orElseThrow()) + ", driver " + version(cuda.driverVersion())
                + ", " + cuda.deviceCount() + " device(s), device 0: " + memory.freeBytes() / MIB + " MiB free of "
                + memory.totalBytes() / MIB + " MiB";
    }

    private String deviceMemory() {
        try (DeviceBuffer device = cuda.allocateDevice(64 * MIB)) {
            PointerAttributes attributes = cuda.pointerAttributes(device.pointer());
            require(attributes.type() == MemoryType.DEVICE, "cudaMalloc memory reported as " + attributes);
            require(attributes.device() == 0, "on device " + attributes.device());
            require(attributes.devicePointer() == device.pointer().address(), "device pointer " + attributes);
            require(device.pointer().byteSize() == 0, "a device pointer must be a zero-length segment");
            return "64 MiB at 0x" + Long.toHexString(device.pointer().address()) + ", " + attributes.type();
        }
    }

    private String pinnedMemory() {
        try (PinnedHostBuffer pinned = cuda.allocatePinned(64 * MIB, HostAllocFlags.PORTABLE | HostAllocFlags.MAPPED)) {
            PointerAttributes attributes = cuda.pointerAttributes(pinned.segment());
            require(attributes.type() == MemoryType.HOST, "cudaHostAlloc memory reported as " + attributes);
            require(attributes.hostPointer() == pinned.segment().address(), "host pointer " + attributes);
            MemorySegment devicePointer = cuda.hostDevicePointer(pinned.segment());
            require(devicePointer.address() != 0, "no device pointer for mapped pinned memory");
            pinned.segment().fill((byte) 0x5a); // writable from Java
            return "64 MiB at 0x" + Long.toHexString(pinned.segment().address()) + ", " + attributes.type()
                    + ", mapped at device address 0x" + Long.toHexString(devicePointer.address());
        }
    }

    /** memcpy host→device, memset on a stream, memcpyAsync device→host: the bytes come back as written. */
    private String copies() {
        long size = 32 * MIB;
        try (PinnedHostBuffer source = cuda.allocatePinned(size, HostAllocFlags.PORTABLE);
             PinnedHostBuffer back = cuda.allocatePinned(size, HostAllocFlags.PORTABLE);
             DeviceBuffer device = cuda.allocateDevice(size);
             CudaStream stream = cuda.createStream(true)) {
            fillRandom(source.segment(), 1);
            cuda.memcpy(device.pointer(), source.segment(), size, MemcpyKind.HOST_TO_DEVICE);
            long zeroFrom = 3 * MIB + 17;
            long zeroLength = 5 * MIB + 3;
            cuda.memsetAsync(device.pointer(zeroFrom), 0, zeroLength, stream);
            cuda.memcpyAsync(back.segment(), device.pointer(), size, MemcpyKind.DEVICE_TO_HOST, stream);
            stream.synchronize();
            MemorySegment expected = Arena.ofAuto().allocate(size);
            expected.copyFrom(source.segment());
            expected.asSlice(zeroFrom, zeroLength).fill((byte) 0);
            long mismatch = expected.mismatch(back.segment());
            require(mismatch == -1, "byte " + mismatch + " differs after the round trip");
            // A pageable (not pinned) source: cudaMemcpy stages it, the bytes must still arrive.
            MemorySegment pageable = Arena.ofAuto().allocate(size, 4096);
            fillRandom(pageable, 2);
            cuda.memcpy(device.pointer(), pageable, size, MemcpyKind.HOST_TO_DEVICE);
            cuda.memcpy(back.segment(), device.pointer(), size, MemcpyKind.DEVICE_TO_HOST);
            require(pageable.mismatch(back.segment()) == -1, "pageable round trip differs");
            return "32 MiB host→device→host, pinned and pageable, with a memset of 5 MiB on a non-blocking stream: identical";
        }
    }

    /** cudaMemcpy2DAsync: every other 4 KiB row out of a pitched source, into a packed destination. */
    private String stridedCopy() {
        long width = 4096;
        long rows = 1024;
        long pitch = 2 * width + 64;
        try (PinnedHostBuffer source = cuda.allocatePinned(pitch * rows, HostAllocFlags.PORTABLE);
             PinnedHostBuffer back = cuda.allocatePinned(width * rows, HostAllocFlags.PORTABLE);
             DeviceBuffer device = cuda.allocateDevice(width * rows);
             CudaStream stream = cuda.createStream(true)) {
            fillRandom(source.segment(), 3);
            cuda.memcpy2DAsync(device.pointer(), width, source.segment(), pitch, width, rows, MemcpyKind.HOST_TO_DEVICE, stream);
            cuda.memcpyAsync(back.segment(), device.pointer(), width * rows, MemcpyKind.DEVICE_TO_HOST, stream);
            stream.synchronize();
            for (long r = 0; r < rows; r++) {
                long m = MemorySegment.mismatch(source.segment(), r * pitch, r * pitch + width,
                        back.segment(), r * width, r * width + width);
                require(m == -1, "row " + r + " differs at byte " + m);
            }
            return rows + " rows of " + width + " B at pitch " + pitch + ": identical";
        }
    }

    /** cudaMemcpyBatchAsync: 1,024 scattered 32 KiB runs to the device and back in two calls, every byte where it belongs. */
    private String batchCopy() {
        if (!cuda.hasBatchCopies()) {
            return "skipped: cudaMemcpyBatchAsync needs a CUDA 13 runtime (copies go one call per run)";
        }
        int runs = 1024;
        long run = 32 * 1024;
        long size = runs * run;
        try (PinnedHostBuffer source = cuda.allocatePinned(size, HostAllocFlags.PORTABLE);
             PinnedHostBuffer back = cuda.allocatePinned(size, HostAllocFlags.PORTABLE);
             DeviceBuffer device = cuda.allocateDevice(size);
             CudaStream stream = cuda.createStream(true);
             Arena arena = Arena.ofConfined()) {
            fillRandom(source.segment(), 7);
            int[] order = new SplittableRandom(8).ints(0, runs).distinct().limit(runs).toArray();
            MemorySegment dsts = arena.allocate(ValueLayout.JAVA_LONG, runs);
            MemorySegment srcs = arena.allocate(ValueLayout.JAVA_LONG, runs);
            MemorySegment sizes = arena.allocate(ValueLayout.JAVA_LONG, runs);
            for (int i = 0; i < runs; i++) { // host run i goes to device slot order[i]
                dsts.setAtIndex(ValueLayout.JAVA_LONG, i, device.pointer().address() + order[i] * run);
                srcs.setAtIndex(ValueLayout.JAVA_LONG, i, source.segment().address() + i * run);
                sizes.setAtIndex(ValueLayout.JAVA_LONG, i, run);
            }
            cuda.memcpyBatchAsync(dsts, srcs, sizes, runs, stream);
            MemorySegment.copy(dsts, 0, srcs, 0, dsts.byteSize()); // and back: device slot order[i] to host run i
            for (int i = 0; i < runs; i++) {
                dsts.setAtIndex(ValueLayout.JAVA_LONG, i, back.segment().address() + i * run);
            }
            cuda.memcpyBatchAsync(dsts, srcs, sizes, runs, stream);
            stream.synchronize();
            require(source.segment().mismatch(back.segment()) == -1, "a run came back to the wrong place");
            return runs + " runs of 32 KiB to shuffled device slots and back, two calls: identical";
        }
    }

    /** cudaHostRegister over an anonymous mapping split in pieces, copies through it, unregister on close. */
    private String hostRegistration() {
        long size = 16 * MIB;
        try (AnonymousMapping mapping = AnonymousMapping.map(size, false, false);
             DeviceBuffer device = cuda.allocateDevice(size)) {
            MemorySegment host = mapping.segment();
            fillRandom(host, 4);
            int pieces;
            try (HostRegistration registration = cuda.registerHost(host, HostRegisterFlags.PORTABLE)) {
                pieces = registration.pieceCount();
                PointerAttributes attributes = cuda.pointerAttributes(host.asSlice(5 * MIB));
                require(attributes.type() == MemoryType.HOST, "registered memory reported as " + attributes);
                cuda.memcpy(device.pointer(), host, size, MemcpyKind.HOST_TO_DEVICE);
                host.fill((byte) 0);
                cuda.memcpy(host, device.pointer(), size, MemcpyKind.DEVICE_TO_HOST);
            }
            MemorySegment expected = Arena.ofAuto().allocate(size);
            fillRandom(expected, 4);
            require(expected.mismatch(host) == -1, "registered round trip differs");
            PointerAttributes after = cuda.pointerAttributes(host);
            require(after.type() == MemoryType.UNREGISTERED, "after unregistering: " + after);
            return "16 MiB mmap registered (" + pieces + " piece), copied both ways, unregistered";
        }
    }

    /** HostArena: cudaHostAlloc without NUMA, mmap + cudaHostRegister with a NUMA node. */
    private String hostArenas() {
        try (HostArena pinned = HostArena.allocate(64 * MIB, HostArenaOptions.DEFAULT);
             HostArena bound = HostArena.allocate(64 * MIB, HostArenaOptions.DEFAULT.withNumaNode(0))) {
            require(pinned.kind() == HostArena.Kind.CUDA_HOST_ALLOC, "default arena is " + pinned.kind());
            require(bound.kind() == HostArena.Kind.CUDA_REGISTERED_MMAP, "NUMA-bound arena is " + bound.kind());
            for (HostArena arena : List.of(pinned, bound)) {
                PointerAttributes attributes = cuda.pointerAttributes(arena.segment());
                require(attributes.type() == MemoryType.HOST, arena.kind() + " reported as " + attributes);
            }
            return "CUDA_HOST_ALLOC (" + pinned.description() + "); CUDA_REGISTERED_MMAP (" + bound.description() + ")";
        }
    }

    /** Errors come back decoded, and the runtime keeps working after them. */
    private String errors() {
        long tooMuch = cuda.memoryInfo().totalBytes() * 4;
        CudaException oom = expectFailure(() -> cuda.allocateDevice(tooMuch).close());
        require(oom.code() == CudaError.MEMORY_ALLOCATION, "oversized cudaMalloc answered " + oom.getMessage());
        CudaException badCopy = expectFailure(() -> cuda.memcpy(MemorySegment.ofAddress(16), MemorySegment.ofAddress(32), 64,
                MemcpyKind.DEVICE_TO_DEVICE));
        require(badCopy.code() != CudaError.SUCCESS, "a copy between invalid addresses succeeded");
        cuda.lastError(); // returns and clears the last error, whichever call left it
        require(cuda.lastError().code() == CudaError.SUCCESS, "the error stayed sticky");
        try (DeviceBuffer after = cuda.allocateDevice(MIB)) {
            require(after.byteSize() == MIB, "allocation after the errors");
        }
        return "cudaMalloc(" + tooMuch / MIB + " MiB): " + oom.error().name() + "; invalid copy: " + badCopy.error().name()
                + "; the runtime works after both";
    }

    private static CudaException expectFailure(Runnable call) {
        try {
            call.run();
        } catch (CudaException e) {
            return e;
        }
        throw new AssertionError("the call succeeded");
    }

    /** Pinned and pageable copy bandwidth, timed with events on one stream: the limit the engine is held to. */
    private String bandwidth() {
        long size = 256 * MIB;
        try (PinnedHostBuffer host = cuda.allocatePinned(size, HostAllocFlags.PORTABLE);
             DeviceBuffer device = cuda.allocateDevice(size);
             CudaStream stream = cuda.createStream(true);
             CudaEvent start = cuda.createEvent(true);
             CudaEvent end = cuda.createEvent(true)) {
            fillRandom(host.segment(), 5);
            double h2d = 0;
            double d2h = 0;
            for (int i = 0; i < 5; i++) {
                h2d = Math.max(h2d, timedCopy(device.pointer(), host.segment(), size, MemcpyKind.HOST_TO_DEVICE, stream, start, end));
                d2h = Math.max(d2h, timedCopy(host.segment(), device.pointer(), size, MemcpyKind.DEVICE_TO_HOST, stream, start, end));
            }
            return String.format("pinned 256 MiB, best of 5: host→device %.1f GB/s, device→host %.1f GB/s", h2d, d2h);
        }
    }

    private double timedCopy(MemorySegment dst, MemorySegment src, long size, MemcpyKind kind, CudaStream stream,
                             CudaEvent start, CudaEvent end) {
        start.record(stream);
        cuda.memcpyAsync(dst, src, size, kind, stream);
        end.record(stream);
        end.synchronize();
        return size / (end.elapsedMillisSince(start) * 1e6);
    }

    static void fillRandom(MemorySegment segment, long seed) {
        SplittableRandom random = new SplittableRandom(seed);
        long longs = segment.byteSize() / 8;
        for (long i = 0; i < longs; i++) {
            segment.setAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, i, random.nextLong());
        }
        for (long i = longs * 8; i < segment.byteSize(); i++) {
            segment.set(ValueLayout.JAVA_BYTE, i, (byte) random.nextInt());
        }
    }

    static void require(boolean condition, String failure) {
        if (!condition) {
            throw new AssertionError(failure);
        }
    }

    private static String version(int v) {
        return v / 1000 + "." + (v % 1000) / 10;
    }
}
