package lmcache4j.cuda.internal;

import java.lang.foreign.AddressLayout;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.OptionalInt;

import lmcache4j.cuda.internal.cudart.cudaIpcMemHandle_st;
import lmcache4j.cuda.internal.libc.libc_h;

/**
 * Every native function lmcache4j links, with its descriptor and linker options: the one place
 * where {@link FunctionDescriptor}s are built and {@link Linker#downcallHandle} is called. The
 * jextract-generated {@code cudart_h} and {@code libc_h} and the hand-written {@code Posix} take
 * their descriptors and handles from here.
 *
 * <p>Why one place: a GraalVM native image can only make the downcalls that were registered when
 * it was built, so the module ships {@code META-INF/native-image/io.lmcache4j/lmcache4j-cuda-bindings/reachability-metadata.json}
 * listing each entry of {@link #ALL}. A test compares the two in both directions, and the
 * native-image constraint check fails any other class that builds a descriptor or links a handle.
 *
 * <p>The constants carry the C symbol's own name, so the generated code maps onto them one to one;
 * {@code ...WithErrno} variants are the same functions linked to capture {@code errno}.
 */
public final class Downcalls {
    /**
     * One native function as it is linked.
     *
     * @param symbol           the C symbol looked up in the loaded libraries
     * @param descriptor       its signature
     * @param capturesErrno    whether the handle captures {@code errno} (it then takes a leading
     *                         capture-state segment, see {@link CapturedErrno})
     * @param firstVariadicArg the index of the first variadic argument, empty for a fixed-arity function
     * @param critical         whether the call skips the thread-state transition
     *                         ({@link Linker.Option#critical}, native memory only): for short calls that never block
     */
    public record Downcall(String symbol, FunctionDescriptor descriptor, boolean capturesErrno,
            OptionalInt firstVariadicArg, boolean critical) {
        public Downcall {
            Objects.requireNonNull(symbol, "symbol");
            Objects.requireNonNull(descriptor, "descriptor");
            Objects.requireNonNull(firstVariadicArg, "firstVariadicArg");
            firstVariadicArg.ifPresent(index -> {
                if (index < 0 || index > descriptor.argumentLayouts().size()) {
                    throw new IllegalArgumentException("first variadic argument " + index + " is outside "
                            + descriptor + " of " + symbol);
                }
            });
        }

        /** The linker options this downcall is linked with, in a fixed order. */
        public Linker.Option[] linkerOptions() {
            List<Linker.Option> options = new ArrayList<>(3);
            firstVariadicArg.ifPresent(index -> options.add(Linker.Option.firstVariadicArg(index)));
            if (capturesErrno) {
                options.add(Linker.Option.captureCallState("errno"));
            }
            if (critical) {
                options.add(Linker.Option.critical(false));
            }
            return options.toArray(Linker.Option[]::new);
        }

        Downcall capturingErrno() {
            return new Downcall(symbol, descriptor, true, firstVariadicArg, critical);
        }
    }

    // The layouts jextract generated the bindings with (C_POINTER points at an unbounded char sequence).
    private static final ValueLayout.OfInt C_INT = libc_h.C_INT;
    private static final ValueLayout.OfLong C_LONG = libc_h.C_LONG;
    private static final AddressLayout C_POINTER = libc_h.C_POINTER;

    // libcudart, bound by cudart_h once CudartLibrary has loaded the library.
    public static final Downcall cudaDeviceSynchronize = plain("cudaDeviceSynchronize", FunctionDescriptor.of(C_INT));
    public static final Downcall cudaIpcGetMemHandle = plain("cudaIpcGetMemHandle", FunctionDescriptor.of(C_INT, C_POINTER, C_POINTER));
    public static final Downcall cudaIpcOpenMemHandle = plain("cudaIpcOpenMemHandle", FunctionDescriptor.of(C_INT, C_POINTER, cudaIpcMemHandle_st.layout(), C_INT));
    public static final Downcall cudaIpcCloseMemHandle = plain("cudaIpcCloseMemHandle", FunctionDescriptor.of(C_INT, C_POINTER));
    public static final Downcall cudaGetLastError = plain("cudaGetLastError", FunctionDescriptor.of(C_INT));
    public static final Downcall cudaGetErrorName = plain("cudaGetErrorName", FunctionDescriptor.of(C_POINTER, C_INT));
    public static final Downcall cudaGetErrorString = plain("cudaGetErrorString", FunctionDescriptor.of(C_POINTER, C_INT));
    public static final Downcall cudaGetDeviceCount = plain("cudaGetDeviceCount", FunctionDescriptor.of(C_INT, C_POINTER));
    public static final Downcall cudaSetDevice = plain("cudaSetDevice", FunctionDescriptor.of(C_INT, C_INT));
    public static final Downcall cudaGetDevice = plain("cudaGetDevice", FunctionDescriptor.of(C_INT, C_POINTER));
    public static final Downcall cudaStreamCreate = plain("cudaStreamCreate", FunctionDescriptor.of(C_INT, C_POINTER));
    public static final Downcall cudaStreamCreateWithFlags = plain("cudaStreamCreateWithFlags", FunctionDescriptor.of(C_INT, C_POINTER, C_INT));
    public static final Downcall cudaStreamDestroy = plain("cudaStreamDestroy", FunctionDescriptor.of(C_INT, C_POINTER));
    public static final Downcall cudaStreamWaitEvent = plain("cudaStreamWaitEvent", FunctionDescriptor.of(C_INT, C_POINTER, C_POINTER, C_INT));
    public static final Downcall cudaStreamSynchronize = plain("cudaStreamSynchronize", FunctionDescriptor.of(C_INT, C_POINTER));
    public static final Downcall cudaEventCreate = plain("cudaEventCreate", FunctionDescriptor.of(C_INT, C_POINTER));
    public static final Downcall cudaEventCreateWithFlags = plain("cudaEventCreateWithFlags", FunctionDescriptor.of(C_INT, C_POINTER, C_INT));
    public static final Downcall cudaEventRecord = plain("cudaEventRecord", FunctionDescriptor.of(C_INT, C_POINTER, C_POINTER));
    public static final Downcall cudaEventSynchronize = plain("cudaEventSynchronize", FunctionDescriptor.of(C_INT, C_POINTER));
    public static final Downcall cudaEventDestroy = plain("cudaEventDestroy", FunctionDescriptor.of(C_INT, C_POINTER));
    public static final Downcall cudaEventElapsedTime = plain("cudaEventElapsedTime", FunctionDescriptor.of(C_INT, C_POINTER, C_POINTER, C_POINTER));
    public static final Downcall cudaMalloc = plain("cudaMalloc", FunctionDescriptor.of(C_INT, C_POINTER, C_LONG));
    public static final Downcall cudaFree = plain("cudaFree", FunctionDescriptor.of(C_INT, C_POINTER));
    public static final Downcall cudaFreeHost = plain("cudaFreeHost", FunctionDescriptor.of(C_INT, C_POINTER));
    public static final Downcall cudaHostAlloc = plain("cudaHostAlloc", FunctionDescriptor.of(C_INT, C_POINTER, C_LONG, C_INT));
    public static final Downcall cudaHostRegister = plain("cudaHostRegister", FunctionDescriptor.of(C_INT, C_POINTER, C_LONG, C_INT));
    public static final Downcall cudaHostUnregister = plain("cudaHostUnregister", FunctionDescriptor.of(C_INT, C_POINTER));
    public static final Downcall cudaHostGetDevicePointer = plain("cudaHostGetDevicePointer", FunctionDescriptor.of(C_INT, C_POINTER, C_POINTER, C_INT));
    public static final Downcall cudaMemGetInfo = plain("cudaMemGetInfo", FunctionDescriptor.of(C_INT, C_POINTER, C_POINTER));
    public static final Downcall cudaMemcpy = plain("cudaMemcpy", FunctionDescriptor.of(C_INT, C_POINTER, C_POINTER, C_LONG, C_INT));
    public static final Downcall cudaMemcpyAsync = plain("cudaMemcpyAsync", FunctionDescriptor.of(C_INT, C_POINTER, C_POINTER, C_LONG, C_INT, C_POINTER));
    public static final Downcall cudaMemcpy2DAsync = plain("cudaMemcpy2DAsync", FunctionDescriptor.of(C_INT, C_POINTER, C_LONG, C_POINTER, C_LONG, C_LONG, C_LONG, C_INT, C_POINTER));
    /** CUDA 13's signature (CUDA 12.8 and 12.9 had a trailing failIdx): only called on a runtime of 13 or later. */
    public static final Downcall cudaMemcpyBatchAsync = plain("cudaMemcpyBatchAsync", FunctionDescriptor.of(C_INT, C_POINTER, C_POINTER, C_POINTER, C_LONG, C_POINTER, C_POINTER, C_LONG, C_POINTER));
    public static final Downcall cudaMemsetAsync = plain("cudaMemsetAsync", FunctionDescriptor.of(C_INT, C_POINTER, C_INT, C_LONG, C_POINTER));
    public static final Downcall cudaPointerGetAttributes = plain("cudaPointerGetAttributes", FunctionDescriptor.of(C_INT, C_POINTER, C_POINTER));
    public static final Downcall cudaDriverGetVersion = plain("cudaDriverGetVersion", FunctionDescriptor.of(C_INT, C_POINTER));
    public static final Downcall cudaRuntimeGetVersion = plain("cudaRuntimeGetVersion", FunctionDescriptor.of(C_INT, C_POINTER));

    // libc, bound by libc_h.
    public static final Downcall getcpu = plain("getcpu", FunctionDescriptor.of(C_INT, C_POINTER, C_POINTER));
    public static final Downcall malloc = plain("malloc", FunctionDescriptor.of(C_POINTER, C_LONG));
    public static final Downcall free = plain("free", FunctionDescriptor.ofVoid(C_POINTER));
    public static final Downcall strerror = plain("strerror", FunctionDescriptor.of(C_POINTER, C_INT));
    public static final Downcall mmap = plain("mmap", FunctionDescriptor.of(C_POINTER, C_POINTER, C_LONG, C_INT, C_INT, C_INT, C_LONG));
    public static final Downcall munmap = plain("munmap", FunctionDescriptor.of(C_INT, C_POINTER, C_LONG));
    public static final Downcall madvise = plain("madvise", FunctionDescriptor.of(C_INT, C_POINTER, C_LONG, C_INT));
    public static final Downcall mlock = plain("mlock", FunctionDescriptor.of(C_INT, C_POINTER, C_LONG));
    public static final Downcall munlock = plain("munlock", FunctionDescriptor.of(C_INT, C_POINTER, C_LONG));
    public static final Downcall getrlimit = plain("getrlimit", FunctionDescriptor.of(C_INT, C_INT, C_POINTER));
    public static final Downcall sysconf = plain("sysconf", FunctionDescriptor.of(C_LONG, C_INT));
    public static final Downcall getpagesize = plain("getpagesize", FunctionDescriptor.of(C_INT));

    // libc relinked by Posix to report errno.
    public static final Downcall mmapWithErrno = mmap.capturingErrno();
    public static final Downcall munmapWithErrno = munmap.capturingErrno();
    public static final Downcall madviseWithErrno = madvise.capturingErrno();
    public static final Downcall mlockWithErrno = mlock.capturingErrno();
    public static final Downcall munlockWithErrno = munlock.capturingErrno();
    public static final Downcall getcpuWithErrno = getcpu.capturingErrno();
    public static final Downcall getrlimitWithErrno = getrlimit.capturingErrno();
    /** {@code long syscall(long number, ...)} with six variadic {@code long} arguments (mbind, get_mempolicy). */
    public static final Downcall syscall6WithErrno = new Downcall("syscall",
            FunctionDescriptor.of(C_LONG, C_LONG, C_LONG, C_LONG, C_LONG, C_LONG, C_LONG, C_LONG), true, OptionalInt.of(1), false);
    /**
     * {@code int mprotect(void *addr, size_t len, int prot)}, relinked by Posix to report errno: it
     * turns {@code StreamingCopy}'s code page from writable to executable. Outside the jextract
     * subset, so looked up by name ({@link #libcSymbol}).
     */
    public static final Downcall mprotectWithErrno = new Downcall("mprotect",
            FunctionDescriptor.of(C_INT, C_POINTER, C_LONG, C_INT), true, OptionalInt.empty(), false);

    /**
     * {@code memcpy(dest, src, n)} for {@code lmcache4j.cuda.cpu.LibcMemcpy}: one call per 32 KiB run,
     * so linked critical (no thread-state transition; it never blocks). Declared void: the returned
     * {@code dest} is never read. Outside the jextract subset, so looked up by name ({@link #libcSymbol}).
     */
    public static final Downcall memcpy = new Downcall("memcpy",
            FunctionDescriptor.ofVoid(C_POINTER, C_POINTER, C_LONG), false, OptionalInt.empty(), true);

    // lmcache4j's own machine code.
    /**
     * {@code void copy(const char *src, char *dst, const long *runs, long count)}: the streaming-store
     * copy routine {@code lmcache4j.cuda.cpu.StreamingCopy} writes into an executable page and links
     * at that page's address. The symbol is a name for messages only; it is never looked up.
     */
    public static final Downcall lmcache4jStreamingCopy = plain("lmcache4j_streaming_copy",
            FunctionDescriptor.ofVoid(C_POINTER, C_POINTER, C_POINTER, C_LONG));

    /** Every downcall above, in declaration order. */
    public static final List<Downcall> ALL = List.of(
            cudaDeviceSynchronize,
            cudaIpcGetMemHandle,
            cudaIpcOpenMemHandle,
            cudaIpcCloseMemHandle,
            cudaGetLastError,
            cudaGetErrorName,
            cudaGetErrorString,
            cudaGetDeviceCount,
            cudaSetDevice,
            cudaGetDevice,
            cudaStreamCreate,
            cudaStreamCreateWithFlags,
            cudaStreamDestroy,
            cudaStreamWaitEvent,
            cudaStreamSynchronize,
            cudaEventCreate,
            cudaEventCreateWithFlags,
            cudaEventRecord,
            cudaEventSynchronize,
            cudaEventDestroy,
            cudaEventElapsedTime,
            cudaMalloc,
            cudaFree,
            cudaFreeHost,
            cudaHostAlloc,
            cudaHostRegister,
            cudaHostUnregister,
            cudaHostGetDevicePointer,
            cudaMemGetInfo,
            cudaMemcpy,
            cudaMemcpyAsync,
            cudaMemcpy2DAsync,
            cudaMemcpyBatchAsync,
            cudaMemsetAsync,
            cudaPointerGetAttributes,
            cudaDriverGetVersion,
            cudaRuntimeGetVersion,
            getcpu,
            malloc,
            free,
            strerror,
            mmap,
            munmap,
            madvise,
            mlock,
            munlock,
            getrlimit,
            sysconf,
            getpagesize,
            mmapWithErrno,
            munmapWithErrno,
            madviseWithErrno,
            mlockWithErrno,
            munlockWithErrno,
            getcpuWithErrno,
            getrlimitWithErrno,
            syscall6WithErrno,
            mprotectWithErrno,
            memcpy,
            lmcache4jStreamingCopy);

    private Downcalls() {
    }

    /** The handle for {@code downcall} at {@code address}, linked with the downcall's own options. */
    public static MethodHandle link(MemorySegment address, Downcall downcall) {
        return Linker.nativeLinker().downcallHandle(address, downcall.descriptor(), downcall.linkerOptions());
    }

    /** The address of the C library function {@code symbol}, for the few calls outside the jextract subset. */
    public static MemorySegment libcSymbol(String symbol) {
        return Linker.nativeLinker().defaultLookup().findOrThrow(symbol);
    }

    private static Downcall plain(String symbol, FunctionDescriptor descriptor) {
        return new Downcall(symbol, descriptor, false, OptionalInt.empty(), false);
    }
}
