package lmcache4j.cuda.cpu;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Collections;
import java.util.EnumMap;
import java.util.EnumSet;
import java.util.HashSet;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Stream;

import lmcache4j.cuda.internal.Downcalls;
import lmcache4j.cuda.posix.Posix;
import lmcache4j.cuda.posix.PosixException;

/**
 * A host-memory copy that writes its destination with non-temporal ("streaming") stores, for the
 * many 32 KiB runs of a KV-cache gather or scatter.
 *
 * <p>Why: {@link MemorySegment#copy} writes runs this short through the cache, so every destination
 * line is first read from memory (read for ownership) and later written back: about 1.5 times the
 * memory traffic of the copy itself. The JDK's copy stub streams only copies of several MiB at once,
 * which is why one large copy runs up to twice as fast as the same bytes in 32 KiB pieces. Java has
 * no streaming store, so lmcache4j carries a small routine of its own ({@code StreamingCopyCode}:
 * the bytes GNU {@code as} makes of {@code src/main/asm/streaming-copy-*.s}), written into a page
 * of anonymous memory that is then made executable and never writable again, and called through
 * the FFM linker. No JNI and no native library file. glibc's {@code memcpy} ({@link LibcMemcpy})
 * was measured against it and kept 15-25 % behind on the same gathers (docs/performance.md).
 *
 * <p>Available on x86-64 Linux, where it picks {@link Isa#AVX2} when the CPU and kernel offer it and
 * {@link Isa#SSE2} (every x86-64 CPU) otherwise. Elsewhere, or where the system forbids executable
 * anonymous memory, {@link #machine()} is empty and {@link #unavailabilityCause()} says why; callers
 * then copy with {@link MemorySegment#copy}. Each routine checks itself once on load against a copy
 * made in Java.
 *
 * <p>Runs reach the routine only through {@link StreamingCopyBatch}, which checks each against the
 * bounds, liveness, alignment and length rules the machine code relies on. Thread-safe: one
 * routine serves any number of threads, each with its own batch.
 */
public final class StreamingCopy {
    /** The instruction sets the routine is written for. */
    public enum Isa {
        /** 16-byte {@code movntdq} stores, 64 bytes a step: every x86-64 CPU. */
        SSE2(16, 64),
        /** 32-byte {@code vmovntdq} stores, 128 bytes a step: CPUs and kernels with AVX2. */
        AVX2(32, 128);

        private final int alignment;
        private final int granule;

        Isa(int alignment, int granule) {
            this.alignment = alignment;
            this.granule = granule;
        }

        /** The alignment, in bytes, every run's destination address must have. */
        public int alignment() {
            return alignment;
        }

        /** Every run's length must be a positive multiple of this many bytes (one unrolled step). */
        public int granule() {
            return granule;
        }

        /** The name in lower case, as configuration and reports print it. */
        public String label() {
            return name().toLowerCase(Locale.ROOT);
        }

        byte[] code() {
            return this == AVX2 ? StreamingCopyCode.avx2() : StreamingCopyCode.sse2();
        }
    }

    /** Per instruction set, the routine or the exception that says why there is none. */
    private static final Map<Isa, Object> LOADED = new EnumMap<>(Isa.class);

    private final Isa isa;
    private final MethodHandle routine;

    private StreamingCopy(Isa isa, MethodHandle routine) {
        this.isa = isa;
        this.routine = routine;
    }

    /** The best routine this machine runs (loaded on first call), or empty: see {@link #unavailabilityCause()}. */
    public static Optional<StreamingCopy> machine() {
        return Machine.COPY;
    }

    /**
     * Why {@link #machine()} is empty, its message the reason (the platform, the CPU flags, a refused
     * {@code mprotect}, a failed self-check, no native access); empty when it is not.
     */
    public static Optional<Throwable> unavailabilityCause() {
        return Optional.ofNullable(Machine.CAUSE);
    }

    /** The routine for {@code isa}, loaded once per process. */
    public static StreamingCopy load(Isa isa) {
        Objects.requireNonNull(isa, "isa");
        synchronized (LOADED) {
            Object loaded = LOADED.get(isa);
            if (loaded == null) {
                try {
                    loaded = loadNow(isa);
                } catch (UnsupportedOperationException e) {
                    loaded = e;
                } catch (RuntimeException | AssertionError e) {
                    // e.g. IllegalCallerException without native access: no routine, and the reason why
                    loaded = new UnsupportedOperationException("the " + isa.label() + " streaming copy could not be loaded: " + e, e);
                }
                LOADED.put(isa, loaded);
            }
            if (loaded instanceof StreamingCopy copy) {
                return copy;
            }
            Throwable cause = (Throwable) loaded;
            throw new UnsupportedOperationException(cause.getMessage(), cause);
        }
    }

    /**
     * The instruction sets this machine runs the routine with; empty off x86-64 Linux.
     * Read from the kernel's CPU flags ({@code /proc/cpuinfo}), which list AVX2 only when the kernel
     * also saves the vector registers it needs.
     */
    public static Set<Isa> supportedIsas() {
        return CpuFlags.SUPPORTED;
    }

    /** The instruction set this routine uses. */
    public Isa isa() {
        return isa;
    }

    /**
     * Whether {@link StreamingCopyBatch#add} would stream this run rather than refuse it: both
     * segments native, {@code dst} writable, a positive multiple of {@link Isa#granule()} bytes, the
     * destination address aligned to {@link Isa#alignment()}, source and destination apart. Bounds
     * are not judged here ({@code add} throws for a run outside its segments).
     */
    public boolean canStream(MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, long length) {
        if (length <= 0 || length % isa.granule != 0 || !src.isNative() || !dst.isNative() || dst.isReadOnly()) {
            return false;
        }
        long from = src.address() + srcOffset;
        long to = dst.address() + dstOffset;
        if ((to & (isa.alignment - 1)) != 0) {
            return false;
        }
        return from + length <= to || to + length <= from;
    }

    /** A batch for the calling thread that holds up to {@code capacity} runs between downcalls. */
    public StreamingCopyBatch newBatch(int capacity) {
        return new StreamingCopyBatch(this, capacity);
    }

    /** Runs the routine over {@code count} triples in {@code runs}; {@code src} and {@code dst} stay alive for the call. */
    void invoke(MemorySegment src, MemorySegment dst, MemorySegment runs, long count) {
        try {
            routine.invokeExact(src, dst, runs, count);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new AssertionError("streaming copy downcall failed", t);
        }
    }

    @Override
    public String toString() {
        return "StreamingCopy[" + isa.label() + "]";
    }

    /** How the routine's page becomes executable: {@code mprotect}, or in a test a system that refuses it. */
    @FunctionalInterface
    interface PageProtection {
        void makeExecutable(MemorySegment page);
    }

    private static final PageProtection MPROTECT = page -> Posix.mprotect(page, Posix.PROT_READ | Posix.PROT_EXEC);

    private static StreamingCopy loadNow(Isa isa) {
        return loadNow(isa, MPROTECT);
    }

    static StreamingCopy loadNow(Isa isa, PageProtection protection) {
        if (!CpuFlags.SUPPORTED.contains(isa)) {
            throw new UnsupportedOperationException("this machine does not run the " + isa.label()
                    + " streaming copy: " + (CpuFlags.SUPPORTED.isEmpty() ? CpuFlags.PLATFORM_REASON
                    : "its CPU flags lack " + isa.label()));
        }
        byte[] code = isa.code();
        long page = Posix.pageSize();
        MemorySegment mapped;
        try {
            mapped = Posix.mmapAnonymous(page, Posix.PROT_READ | Posix.PROT_WRITE, Posix.MAP_PRIVATE).reinterpret(page);
        } catch (PosixException e) {
            throw new UnsupportedOperationException("no page for the streaming copy: " + e.getMessage());
        }
        MemorySegment.copy(code, 0, mapped, ValueLayout.JAVA_BYTE, 0, code.length);
        try {
            // Executable and never writable again; the page lives as long as the process.
            protection.makeExecutable(mapped);
        } catch (PosixException e) {
            Posix.munmap(mapped, page);
            throw new UnsupportedOperationException("the streaming copy cannot be made executable: " + e.getMessage());
        }
        StreamingCopy copy = new StreamingCopy(isa, Downcalls.link(MemorySegment.ofAddress(mapped.address()),
                Downcalls.lmcache4jStreamingCopy));
        try {
            copy.selfCheck();
        } catch (RuntimeException | AssertionError e) {
            Posix.munmap(mapped, page); // a routine that copied wrongly is never called again
            throw e;
        }
        return copy;
    }

    /**
     * Copies a pattern through the routine (runs at odd source offsets, one of several steps, a
     * two-run batch) and compares it with {@link MemorySegment#copy}: a routine that copied wrongly
     * must never be used.
     */
    private void selfCheck() {
        long step = isa.granule;
        try (Arena arena = Arena.ofConfined(); StreamingCopyBatch batch = newBatch(4)) {
            MemorySegment src = arena.allocate(8 * step + 64, 64);
            MemorySegment dst = arena.allocate(8 * step, 64);
            MemorySegment expected = arena.allocate(8 * step, 64);
            for (long i = 0; i < src.byteSize(); i++) {
                src.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 31 + 7));
            }
            MemorySegment.copy(src, 3, expected, 0, step);
            MemorySegment.copy(src, 5 + step, expected, 2 * step, 3 * step);
            if (!batch.add(src, 3, dst, 0, step) || !batch.add(src, 5 + step, dst, 2 * step, 3 * step)) {
                throw new AssertionError("the self-check's runs were refused by " + this);
            }
            batch.flush();
            if (dst.mismatch(expected) != -1) {
                throw new UnsupportedOperationException("the " + isa.label()
                        + " streaming copy failed its self-check (first differing byte " + dst.mismatch(expected) + ")");
            }
        }
    }

    /** The platform and CPU flags, read once (no locks: {@link #load} may read it while holding its own). */
    private static final class CpuFlags {
        static final String PLATFORM_REASON;
        static final Set<Isa> SUPPORTED;

        static {
            String os = System.getProperty("os.name", "");
            String arch = System.getProperty("os.arch", "");
            boolean x86Linux = os.startsWith("Linux") && (arch.equals("amd64") || arch.equals("x86_64"));
            PLATFORM_REASON = x86Linux ? "" : "the streaming copy is written for x86-64 Linux; this is " + os + " on " + arch;
            SUPPORTED = x86Linux ? isasFromCpuFlags() : Set.of();
        }

        private static Set<Isa> isasFromCpuFlags() {
            Set<String> flags = new HashSet<>();
            try (Stream<String> lines = Files.lines(Path.of("/proc/cpuinfo"))) {
                lines.filter(l -> l.startsWith("flags")).findFirst()
                        .ifPresent(l -> flags.addAll(Arrays.asList(l.substring(l.indexOf(':') + 1).trim().split("\\s+"))));
            } catch (IOException | RuntimeException e) {
                // unreadable: SSE2 alone, which is part of x86-64 itself
            }
            EnumSet<Isa> supported = EnumSet.of(Isa.SSE2);
            if (flags.contains(Isa.AVX2.label())) {
                supported.add(Isa.AVX2);
            }
            return Collections.unmodifiableSet(supported);
        }
    }

    /** The best routine this machine runs, loaded once. */
    private static final class Machine {
        static final Optional<StreamingCopy> COPY;
        static final Throwable CAUSE;

        static {
            Optional<StreamingCopy> copy = Optional.empty();
            Throwable cause = new UnsupportedOperationException(CpuFlags.PLATFORM_REASON);
            for (Isa isa : new Isa[] {Isa.AVX2, Isa.SSE2}) {
                if (!CpuFlags.SUPPORTED.contains(isa)) {
                    continue;
                }
                try {
                    copy = Optional.of(load(isa));
                    cause = null;
                    break;
                } catch (UnsupportedOperationException e) {
                    cause = e;
                }
            }
            COPY = copy;
            CAUSE = cause;
        }
    }
}
