package lmcache4j.cuda.posix;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.BitSet;

import lmcache4j.cuda.internal.Downcalls;
import lmcache4j.cuda.internal.CapturedErrno;
import lmcache4j.cuda.internal.libc.libc_h;
import lmcache4j.cuda.internal.libc.rlimit;

/**
 * The few libc and Linux system calls that host memory management needs, bound through the
 * jextract-generated {@code libc_h} and relinked to capture {@code errno}. Every failure is a
 * {@link PosixException} that names the call, its arguments and the errno.
 *
 * <p>Mappings are made through {@link AnonymousMapping}, which owns their lifetime; the calls here
 * act on segments the caller already owns and never free memory.
 */
public final class Posix {
    public static final int PROT_NONE = libc_h.PROT_NONE();
    /** {@code PROT_EXEC}: 4 on every Linux architecture (outside the jextract subset, like {@link #mprotect}). */
    public static final int PROT_EXEC = 4;
    public static final int PROT_READ = libc_h.PROT_READ();
    public static final int PROT_WRITE = libc_h.PROT_WRITE();
    public static final int MAP_PRIVATE = libc_h.MAP_PRIVATE();
    public static final int MAP_SHARED = libc_h.MAP_SHARED();
    public static final int MAP_ANONYMOUS = libc_h.MAP_ANONYMOUS();
    public static final int MAP_NORESERVE = libc_h.MAP_NORESERVE();
    public static final int MAP_HUGETLB = libc_h.MAP_HUGETLB();
    public static final int MAP_POPULATE = libc_h.MAP_POPULATE();
    public static final int MADV_WILLNEED = libc_h.MADV_WILLNEED();
    public static final int MADV_DONTNEED = libc_h.MADV_DONTNEED();
    public static final int MADV_HUGEPAGE = libc_h.MADV_HUGEPAGE();
    public static final int MADV_NOHUGEPAGE = libc_h.MADV_NOHUGEPAGE();
    /**
     * Populate (prefault) a region writable, failing with an errno instead of SIGBUS when the pages
     * cannot be backed (Linux 5.14, {@code <linux/mman.h>}; older kernels answer {@code EINVAL}).
     * Not in the glibc headers the bindings are generated from, hence the number.
     */
    public static final int MADV_POPULATE_WRITE = 23;
    public static final int MPOL_DEFAULT = libc_h.MPOL_DEFAULT();
    public static final int MPOL_PREFERRED = libc_h.MPOL_PREFERRED();
    public static final int MPOL_BIND = libc_h.MPOL_BIND();
    public static final int MPOL_INTERLEAVE = libc_h.MPOL_INTERLEAVE();
    public static final int MPOL_MF_STRICT = libc_h.MPOL_MF_STRICT();
    public static final int MPOL_MF_MOVE = libc_h.MPOL_MF_MOVE();
    public static final int ENOMEM = libc_h.ENOMEM();
    public static final int EPERM = libc_h.EPERM();
    public static final int EINVAL = libc_h.EINVAL();
    public static final int EAGAIN = libc_h.EAGAIN();
    public static final int ENOSYS = libc_h.ENOSYS();
    public static final int EFAULT = libc_h.EFAULT();
    /** {@code EACCES}: 13 on every Linux architecture (outside the jextract subset). */
    public static final int EACCES = 13;

    /** Bits in the node masks passed to mbind: Linux's MAX_NUMNODES on the largest configurations. */
    private static final int MAX_NODES = 1024;

    private Posix() {
    }

    /** Handles relinked with errno capture; built on first use of a memory call. */
    private static final class Calls {
        static final MethodHandle MMAP = Downcalls.link(libc_h.mmap$address(), Downcalls.mmapWithErrno);
        static final MethodHandle MUNMAP = Downcalls.link(libc_h.munmap$address(), Downcalls.munmapWithErrno);
        static final MethodHandle MADVISE = Downcalls.link(libc_h.madvise$address(), Downcalls.madviseWithErrno);
        static final MethodHandle MLOCK = Downcalls.link(libc_h.mlock$address(), Downcalls.mlockWithErrno);
        static final MethodHandle MUNLOCK = Downcalls.link(libc_h.munlock$address(), Downcalls.munlockWithErrno);
        static final MethodHandle GETCPU = Downcalls.link(libc_h.getcpu$address(), Downcalls.getcpuWithErrno);
        static final MethodHandle MPROTECT = Downcalls.link(Downcalls.libcSymbol("mprotect"), Downcalls.mprotectWithErrno);
        static final MethodHandle GETRLIMIT = Downcalls.link(libc_h.getrlimit$address(), Downcalls.getrlimitWithErrno);
        /** {@code long syscall(long number, ...)} with six variadic {@code long} arguments. */
        static final MethodHandle SYSCALL6 = Downcalls.link(libc_h.syscall.address(), Downcalls.syscall6WithErrno);
    }

    /** The size of a base page in bytes. */
    public static long pageSize() {
        return libc_h.getpagesize();
    }

    /** The C library's message for {@code errno}, as {@code strerror(3)} gives it. */
    public static String strerror(int errno) {
        MemorySegment text = libc_h.strerror(errno);
        return text.equals(MemorySegment.NULL) ? "unknown error " + errno : text.getString(0);
    }

    /**
     * Maps {@code length} bytes of anonymous memory ({@code fd = -1}, offset 0).
     *
     * @return the mapping's address as a zero-length segment; the caller owns it and must
     *         {@link #munmap} it. {@link AnonymousMapping} does both for you.
     */
    public static MemorySegment mmapAnonymous(long length, int prot, int flags) {
        requirePositive("mmap length", length);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = CapturedErrno.allocateCaptureState(arena);
            MemorySegment address = (MemorySegment) Calls.MMAP.invokeExact(
                    state, MemorySegment.NULL, length, prot, flags | MAP_ANONYMOUS, -1, 0L);
            if (address.equals(libc_h.MAP_FAILED())) {
                int errno = CapturedErrno.errno(state);
                throw new PosixException("mmap(NULL, " + length + ", prot=0x" + Integer.toHexString(prot)
                        + ", flags=0x" + Integer.toHexString(flags | MAP_ANONYMOUS) + ", -1, 0)", errno,
                        (flags & MAP_HUGETLB) != 0 && errno == ENOMEM
                                ? "MAP_HUGETLB needs reserved huge pages: see /proc/sys/vm/nr_hugepages" : null);
            }
            return address;
        } catch (PosixException e) {
            throw e;
        } catch (Throwable t) {
            throw new AssertionError("mmap downcall failed", t);
        }
    }

    /** Unmaps {@code length} bytes at {@code address}. */
    public static void munmap(MemorySegment address, long length) {
        int[] errno = new int[1];
        int rc = call2(Calls.MUNMAP, address, length, errno);
        if (rc != 0) {
            throw new PosixException("munmap(" + hex(address) + ", " + length + ")", errno[0], null);
        }
    }

    /** {@code madvise(2)} over the whole of {@code region}. */
    public static void madvise(MemorySegment region, int advice) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = CapturedErrno.allocateCaptureState(arena);
            int rc = (int) Calls.MADVISE.invokeExact(state, region, region.byteSize(), advice);
            if (rc != 0) {
                throw new PosixException("madvise(" + hex(region) + ", " + region.byteSize() + ", " + advice + ")",
                        CapturedErrno.errno(state), null);
            }
        } catch (PosixException e) {
            throw e;
        } catch (Throwable t) {
            throw new AssertionError("madvise downcall failed", t);
        }
    }

    /**
     * Locks {@code region} in RAM ({@code mlock(2)}). The usual refusal is the memlock limit: the
     * exception then says how to raise it.
     */
    public static void mlock(MemorySegment region) {
        int[] errno = new int[1];
        int rc = call2(Calls.MLOCK, region, region.byteSize(), errno);
        if (rc != 0) {
            String hint = errno[0] == ENOMEM || errno[0] == EPERM || errno[0] == EAGAIN
                    ? "The memlock limit is " + memlockLimit() + "; raise it with `ulimit -l unlimited` "
                    + "(or LimitMEMLOCK= for a systemd service, memlock in /etc/security/limits.conf), "
                    + "or turn mlock off"
                    : null;
            throw new PosixException("mlock(" + hex(region) + ", " + region.byteSize() + ")", errno[0], hint);
        }
    }

    /**
     * Sets the protection of {@code region}, which must start on a page boundary
     * ({@code mprotect(2)}), to {@code prot}: a combination of {@link #PROT_READ},
     * {@link #PROT_WRITE}, {@link #PROT_EXEC}, or {@link #PROT_NONE}. A region made unwritable must
     * not be written from Java afterwards: the write would fault.
     */
    public static void mprotect(MemorySegment region, int prot) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = CapturedErrno.allocateCaptureState(arena);
            int rc = (int) Calls.MPROTECT.invokeExact(state, region, region.byteSize(), prot);
            if (rc != 0) {
                int errno = CapturedErrno.errno(state);
                throw new PosixException("mprotect(" + hex(region) + ", " + region.byteSize() + ", prot=0x"
                        + Integer.toHexString(prot) + ")", errno,
                        (prot & PROT_EXEC) != 0 && (errno == EACCES || errno == EPERM)
                                ? "the system forbids executable anonymous memory (SELinux execmem, PaX or a seccomp policy)"
                                : null);
            }
        } catch (PosixException e) {
            throw e;
        } catch (Throwable t) {
            throw new AssertionError("mprotect downcall failed", t);
        }
    }

    /** Unlocks {@code region} ({@code munlock(2)}). */
    public static void munlock(MemorySegment region) {
        int[] errno = new int[1];
        int rc = call2(Calls.MUNLOCK, region, region.byteSize(), errno);
        if (rc != 0) {
            throw new PosixException("munlock(" + hex(region) + ", " + region.byteSize() + ")", errno[0], null);
        }
    }

    /**
     * Sets the NUMA memory policy of {@code region} ({@code mbind(2)} through {@code syscall}).
     *
     * @param mode  one of {@link #MPOL_DEFAULT}, {@link #MPOL_PREFERRED}, {@link #MPOL_BIND},
     *              {@link #MPOL_INTERLEAVE}
     * @param nodes the node ids the policy names; empty for {@link #MPOL_DEFAULT}
     * @param flags {@code 0}, or {@link #MPOL_MF_STRICT} / {@link #MPOL_MF_MOVE}
     */
    public static void mbind(MemorySegment region, int mode, BitSet nodes, int flags) {
        if (nodes.length() > MAX_NODES) {
            throw new IllegalArgumentException("NUMA node " + (nodes.length() - 1) + " is beyond the supported " + MAX_NODES);
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment mask = arena.allocate(ValueLayout.JAVA_LONG, MAX_NODES / 64);
            long[] words = nodes.toLongArray();
            MemorySegment.copy(words, 0, mask, ValueLayout.JAVA_LONG, 0, words.length);
            MemorySegment state = CapturedErrno.allocateCaptureState(arena);
            long maxNode = nodes.isEmpty() ? 0 : MAX_NODES;
            long rc = (long) Calls.SYSCALL6.invokeExact(state, (long) libc_h.SYS_mbind(),
                    region.address(), region.byteSize(), (long) mode,
                    nodes.isEmpty() ? 0L : mask.address(), maxNode, (long) flags);
            if (rc != 0) {
                throw new PosixException("mbind(" + hex(region) + ", " + region.byteSize() + ", mode=" + mode
                        + ", nodes=" + nodes + ", flags=" + flags + ")", CapturedErrno.errno(state), null);
            }
        } catch (PosixException | IllegalArgumentException e) {
            throw e;
        } catch (Throwable t) {
            throw new AssertionError("syscall(SYS_mbind) downcall failed", t);
        }
    }

    /**
     * The NUMA node that holds the page at {@code address} ({@code get_mempolicy(2)} with
     * {@code MPOL_F_NODE | MPOL_F_ADDR}). The page must have been touched.
     */
    public static int nodeOfAddress(MemorySegment address) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment node = arena.allocate(ValueLayout.JAVA_INT);
            MemorySegment state = CapturedErrno.allocateCaptureState(arena);
            long flags = libc_h.MPOL_F_NODE() | libc_h.MPOL_F_ADDR();
            long rc = (long) Calls.SYSCALL6.invokeExact(state, (long) libc_h.SYS_get_mempolicy(),
                    node.address(), 0L, 0L, address.address(), flags, 0L);
            if (rc != 0) {
                throw new PosixException("get_mempolicy(MPOL_F_NODE|MPOL_F_ADDR, " + hex(address) + ")",
                        CapturedErrno.errno(state), null);
            }
            return node.get(ValueLayout.JAVA_INT, 0);
        } catch (PosixException e) {
            throw e;
        } catch (Throwable t) {
            throw new AssertionError("syscall(SYS_get_mempolicy) downcall failed", t);
        }
    }

    /** The CPU and NUMA node the calling thread is running on ({@code getcpu(2)}). */
    public static CpuLocation getcpu() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment cpu = arena.allocate(ValueLayout.JAVA_INT);
            MemorySegment node = arena.allocate(ValueLayout.JAVA_INT);
            MemorySegment state = CapturedErrno.allocateCaptureState(arena);
            int rc = (int) Calls.GETCPU.invokeExact(state, cpu, node);
            if (rc != 0) {
                throw new PosixException("getcpu()", CapturedErrno.errno(state), null);
            }
            return new CpuLocation(cpu.get(ValueLayout.JAVA_INT, 0), node.get(ValueLayout.JAVA_INT, 0));
        } catch (PosixException e) {
            throw e;
        } catch (Throwable t) {
            throw new AssertionError("getcpu downcall failed", t);
        }
    }

    /**
     * {@code malloc(3)}: {@code bytes} of C heap as a segment of that size, unmanaged: the caller
     * must {@link #free} it exactly once. Used as the baseline allocator in benchmarks.
     */
    public static MemorySegment malloc(long bytes) {
        requirePositive("malloc size", bytes);
        MemorySegment p = libc_h.malloc(bytes);
        if (p.equals(MemorySegment.NULL)) {
            throw new PosixException("malloc(" + bytes + ")", ENOMEM, null);
        }
        return p.reinterpret(bytes);
    }

    /** {@code free(3)} of memory from {@link #malloc}. */
    public static void free(MemorySegment memory) {
        libc_h.free(memory);
    }

    /** The process's {@code RLIMIT_MEMLOCK}: how many bytes it may lock in RAM. */
    public static ResourceLimit memlockLimit() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment limit = arena.allocate(rlimit.layout());
            MemorySegment state = CapturedErrno.allocateCaptureState(arena);
            int rc = (int) Calls.GETRLIMIT.invokeExact(state, libc_h.RLIMIT_MEMLOCK(), limit);
            if (rc != 0) {
                throw new PosixException("getrlimit(RLIMIT_MEMLOCK)", CapturedErrno.errno(state), null);
            }
            return new ResourceLimit(toLimit(rlimit.rlim_cur(limit)), toLimit(rlimit.rlim_max(limit)));
        } catch (PosixException e) {
            throw e;
        } catch (Throwable t) {
            throw new AssertionError("getrlimit downcall failed", t);
        }
    }

    private static long toLimit(long raw) {
        return raw == libc_h.RLIM_INFINITY() ? ResourceLimit.UNLIMITED : raw;
    }

    /** Calls an {@code int f(void *, size_t)} handle, storing errno in {@code errnoOut[0]}. */
    private static int call2(MethodHandle handle, MemorySegment address, long length, int[] errnoOut) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = CapturedErrno.allocateCaptureState(arena);
            int rc = (int) handle.invokeExact(state, address, length);
            errnoOut[0] = CapturedErrno.errno(state);
            return rc;
        } catch (Throwable t) {
            throw new AssertionError("downcall failed", t);
        }
    }

    private static void requirePositive(String what, long value) {
        if (value <= 0) {
            throw new IllegalArgumentException(what + " must be positive, was " + value);
        }
    }

    static String hex(MemorySegment address) {
        return "0x" + Long.toHexString(address.address());
    }
}
