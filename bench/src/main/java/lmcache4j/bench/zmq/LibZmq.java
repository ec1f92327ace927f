package lmcache4j.bench.zmq;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.StructLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.util.Optional;

/**
 * The few libzmq functions {@code bench zmq} measures libzmq with (Debian's {@code libzmq5}, 4.3),
 * bound by hand for this measurement only. lmcache4j's sockets are JeroMQ's; were they to move to
 * libzmq, the binding would be generated with jextract from {@code zmq.h}, as the CUDA bindings are
 * (cuda-bindings/jextract/README.md). Only the launcher's {@code bench zmq} grants the bench module
 * native access; the benchmark never runs in a native image.
 */
final class LibZmq {
    static final int PUB = 1;
    static final int SUB = 2;
    static final int DEALER = 5;
    static final int ROUTER = 6;
    static final int PULL = 7;
    static final int PUSH = 8;

    static final int SUBSCRIBE = 6;
    static final int RCVMORE = 13;
    static final int LINGER = 17;
    static final int SNDHWM = 23;
    static final int RCVHWM = 24;
    static final int RCVTIMEO = 27;
    static final int LAST_ENDPOINT = 32;
    static final int CURVE_SERVER = 47;
    static final int CURVE_PUBLICKEY = 48;
    static final int CURVE_SECRETKEY = 49;
    static final int CURVE_SERVERKEY = 50;
    static final int HANDSHAKE_IVL = 66;
    static final int SNDMORE = 2;
    static final int EAGAIN = 11;
    private static final int IO_THREADS = 1;

    private static final String[] NAMES = {"libzmq.so.5", "libzmq.so"};
    /** zmq_send and zmq_recv report why they failed in errno, which the JVM may change before a later call reads it. */
    private static final Linker.Option ERRNO = Linker.Option.captureCallState("errno");
    private static final StructLayout CALL_STATE = Linker.Option.captureStateLayout();
    private static final VarHandle CAPTURED_ERRNO = CALL_STATE.varHandle(MemoryLayout.PathElement.groupElement("errno"));

    private final MethodHandle ctxNew;
    private final MethodHandle ctxSet;
    private final MethodHandle ctxTerm;
    private final MethodHandle socket;
    private final MethodHandle close;
    private final MethodHandle setsockopt;
    private final MethodHandle getsockopt;
    private final MethodHandle bind;
    private final MethodHandle connect;
    private final MethodHandle send;
    private final MethodHandle recv;
    private final MethodHandle errno;
    private final MethodHandle strerror;
    private final MethodHandle version;
    private final MethodHandle has;

    private LibZmq(SymbolLookup lib) {
        Linker linker = Linker.nativeLinker();
        ctxNew = handle(linker, lib, "zmq_ctx_new", FunctionDescriptor.of(ADDRESS));
        ctxSet = handle(linker, lib, "zmq_ctx_set", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT));
        ctxTerm = handle(linker, lib, "zmq_ctx_term", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        socket = handle(linker, lib, "zmq_socket", FunctionDescriptor.of(ADDRESS, ADDRESS, JAVA_INT));
        close = handle(linker, lib, "zmq_close", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        setsockopt = handle(linker, lib, "zmq_setsockopt", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, ADDRESS, JAVA_LONG));
        getsockopt = handle(linker, lib, "zmq_getsockopt", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, ADDRESS, ADDRESS));
        bind = handle(linker, lib, "zmq_bind", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
        connect = handle(linker, lib, "zmq_connect", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
        send = handle(linker, lib, "zmq_send", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_LONG, JAVA_INT), ERRNO);
        recv = handle(linker, lib, "zmq_recv", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_LONG, JAVA_INT), ERRNO);
        errno = handle(linker, lib, "zmq_errno", FunctionDescriptor.of(JAVA_INT));
        strerror = handle(linker, lib, "zmq_strerror", FunctionDescriptor.of(ADDRESS, JAVA_INT));
        version = handle(linker, lib, "zmq_version", FunctionDescriptor.ofVoid(ADDRESS, ADDRESS, ADDRESS));
        has = handle(linker, lib, "zmq_has", FunctionDescriptor.of(JAVA_INT, ADDRESS));
    }

    /** libzmq, or why it cannot be used (not installed: {@code apt-get install libzmq5}; no CURVE). */
    static LibZmq load() {
        IllegalArgumentException last = null;
        for (String name : NAMES) {
            try {
                LibZmq z = new LibZmq(SymbolLookup.libraryLookup(name, Arena.global()));
                if (!z.has("curve")) {
                    throw new IllegalStateException("this libzmq (" + z.version() + ") was built without CURVE");
                }
                return z;
            } catch (IllegalArgumentException e) {
                last = e;
            }
        }
        throw new IllegalStateException("libzmq is not installed (Debian: apt-get install libzmq5): " + last.getMessage(),
                last);
    }

    private static MethodHandle handle(Linker linker, SymbolLookup lib, String name, FunctionDescriptor descriptor,
            Linker.Option... options) {
        Optional<MemorySegment> symbol = lib.find(name);
        return linker.downcallHandle(symbol.orElseThrow(() -> new IllegalStateException("libzmq has no " + name)),
                descriptor, options);
    }

    /** Where a send or receive leaves its errno: one per socket. */
    static MemorySegment callState(Arena arena) {
        return arena.allocate(CALL_STATE);
    }

    /** The errno the last send or receive into {@code state} left. */
    static int errno(MemorySegment state) {
        return (int) CAPTURED_ERRNO.get(state, 0L);
    }

    String version() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment major = a.allocate(JAVA_INT);
            MemorySegment minor = a.allocate(JAVA_INT);
            MemorySegment patch = a.allocate(JAVA_INT);
            version.invokeExact(major, minor, patch);
            return major.get(JAVA_INT, 0) + "." + minor.get(JAVA_INT, 0) + "." + patch.get(JAVA_INT, 0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    boolean has(String capability) {
        try (Arena a = Arena.ofConfined()) {
            return (int) has.invokeExact(a.allocateFrom(capability)) != 0;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    MemorySegment newContext(int ioThreads) {
        try {
            MemorySegment ctx = (MemorySegment) ctxNew.invokeExact();
            check((int) ctxSet.invokeExact(ctx, IO_THREADS, ioThreads), "zmq_ctx_set");
            return ctx;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    void term(MemorySegment ctx) {
        try {
            check((int) ctxTerm.invokeExact(ctx), "zmq_ctx_term");
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    MemorySegment socket(MemorySegment ctx, int type) {
        try {
            MemorySegment s = (MemorySegment) socket.invokeExact(ctx, type);
            if (s.address() == 0) {
                throw new IllegalStateException("zmq_socket: " + lastError());
            }
            return s;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    void close(MemorySegment s) {
        try {
            check((int) close.invokeExact(s), "zmq_close");
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    void setInt(MemorySegment s, int option, int value) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment v = a.allocateFrom(JAVA_INT, value);
            check((int) setsockopt.invokeExact(s, option, v, JAVA_INT.byteSize()), "zmq_setsockopt " + option);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    void setBytes(MemorySegment s, int option, byte[] value) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment v = a.allocate(Math.max(1, value.length));
            MemorySegment.copy(value, 0, v, JAVA_BYTE, 0, value.length);
            check((int) setsockopt.invokeExact(s, option, v, (long) value.length), "zmq_setsockopt " + option);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** Whether the last frame received on {@code s} has more after it; {@code scratch} holds an int and a size_t. */
    boolean rcvMore(MemorySegment s, MemorySegment scratch) {
        MemorySegment value = scratch.asSlice(0, JAVA_INT.byteSize());
        MemorySegment length = scratch.asSlice(JAVA_LONG.byteSize(), JAVA_LONG.byteSize());
        length.set(JAVA_LONG, 0, JAVA_INT.byteSize());
        try {
            check((int) getsockopt.invokeExact(s, RCVMORE, value, length), "zmq_getsockopt ZMQ_RCVMORE");
            return value.get(JAVA_INT, 0) != 0;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    String lastEndpoint(MemorySegment s) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment v = a.allocate(256);
            MemorySegment len = a.allocateFrom(JAVA_LONG, 256L);
            check((int) getsockopt.invokeExact(s, LAST_ENDPOINT, v, len), "zmq_getsockopt ZMQ_LAST_ENDPOINT");
            return v.getString(0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    void bind(MemorySegment s, String endpoint) {
        try (Arena a = Arena.ofConfined()) {
            check((int) bind.invokeExact(s, a.allocateFrom(endpoint)), "zmq_bind " + endpoint);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    void connect(MemorySegment s, String endpoint) {
        try (Arena a = Arena.ofConfined()) {
            check((int) connect.invokeExact(s, a.allocateFrom(endpoint)), "zmq_connect " + endpoint);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** Bytes queued, or -1 with {@link #errno(MemorySegment)} of {@code state} set (EAGAIN: a timeout or a full queue). */
    int send(MemorySegment state, MemorySegment s, MemorySegment buffer, long length, int flags) {
        try {
            return (int) send.invokeExact(state, s, buffer, length, flags);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** The frame's full size (more than {@code buffer} holds when it was cut), or -1 with {@code state}'s errno set. */
    int recv(MemorySegment state, MemorySegment s, MemorySegment buffer, int flags) {
        try {
            return (int) recv.invokeExact(state, s, buffer, buffer.byteSize(), flags);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    int errno() {
        try {
            return (int) errno.invokeExact();
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    String lastError() {
        int e = errno();
        try {
            MemorySegment text = (MemorySegment) strerror.invokeExact(e);
            return text.reinterpret(256).getString(0) + " (errno " + e + ")";
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    private void check(int rc, String what) {
        if (rc != 0) {
            throw new IllegalStateException(what + ": " + lastError());
        }
    }

    private static RuntimeException rethrow(Throwable t) {
        if (t instanceof RuntimeException r) {
            throw r;
        }
        if (t instanceof Error e) {
            throw e;
        }
        throw new IllegalStateException(t);
    }
}
