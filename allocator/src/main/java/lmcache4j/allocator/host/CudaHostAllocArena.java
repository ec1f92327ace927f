package lmcache4j.allocator.host;

import java.lang.foreign.MemorySegment;

import lmcache4j.cuda.PinnedHostBuffer;

/** A {@link HostArena} from {@code cudaHostAlloc}. */
public final class CudaHostAllocArena implements HostArena {
    private final PinnedHostBuffer buffer;

    CudaHostAllocArena(PinnedHostBuffer buffer) {
        this.buffer = buffer;
    }

    @Override
    public MemorySegment segment() {
        return buffer.segment();
    }

    @Override
    public long byteSize() {
        return buffer.byteSize();
    }

    @Override
    public Kind kind() {
        return Kind.CUDA_HOST_ALLOC;
    }

    @Override
    public String description() {
        return "cudaHostAlloc " + HostArenas.formatBytes(byteSize()) + " (pinned, portable)";
    }

    @Override
    public void close() {
        buffer.close();
    }

    @Override
    public String toString() {
        return "HostArena[" + description() + "]";
    }
}
