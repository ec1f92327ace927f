package lmcache4j.allocator.host;

import java.lang.foreign.MemorySegment;

import lmcache4j.cuda.HostRegistration;
import lmcache4j.cuda.posix.AnonymousMapping;

/**
 * A {@link HostArena} of anonymous mmap memory, optionally registered with CUDA. Closing
 * unregisters it (when registered) and then unmaps it.
 */
public final class MappedHostArena implements HostArena {
    private final AnonymousMapping mapping;
    private final HostRegistration registration;
    private final String description;

    MappedHostArena(AnonymousMapping mapping, HostRegistration registration, String description) {
        this.mapping = mapping;
        this.registration = registration;
        this.description = description;
    }

    @Override
    public MemorySegment segment() {
        return mapping.segment();
    }

    @Override
    public long byteSize() {
        return mapping.byteSize();
    }

    @Override
    public Kind kind() {
        return registration != null ? Kind.CUDA_REGISTERED_MMAP : Kind.MMAP;
    }

    @Override
    public String description() {
        return description;
    }

    @Override
    public void close() {
        try {
            if (registration != null) {
                registration.close();
            }
        } finally {
            mapping.close();
        }
    }

    @Override
    public String toString() {
        return "HostArena[" + description + "]";
    }
}
