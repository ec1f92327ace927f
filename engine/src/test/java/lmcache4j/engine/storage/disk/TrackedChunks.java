package lmcache4j.engine.storage.disk;

import java.util.ArrayList;
import java.util.List;

import lmcache4j.allocator.DType;
import lmcache4j.allocator.MemoryFormat;
import lmcache4j.allocator.MemoryObj;
import lmcache4j.allocator.TensorShape;
import lmcache4j.allocator.tensor.TensorMemoryAllocator;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * The disk tests' pool and the objects a test took from it: a fresh pool before each test; after
 * it every tracked object is released and the pool closed (which fails if anything leaked).
 * Register it on an instance field with {@code @RegisterExtension}.
 */
final class TrackedChunks implements BeforeEachCallback, AfterEachCallback {
    private final long poolBytes;
    private final List<MemoryObj> live = new ArrayList<>();
    private TensorMemoryAllocator alloc;

    TrackedChunks(long poolBytes) {
        this.poolBytes = poolBytes;
    }

    @Override
    public void beforeEach(ExtensionContext context) {
        alloc = DiskTestChunks.allocator(poolBytes);
    }

    @Override
    public void afterEach(ExtensionContext context) {
        live.forEach(MemoryObj::release);
        live.clear();
        alloc.close();
    }

    TensorMemoryAllocator allocator() {
        return alloc;
    }

    /** Releases {@code obj} after the test. */
    MemoryObj track(MemoryObj obj) {
        live.add(obj);
        return obj;
    }

    /** A tracked chunk of {@code shape} filled from {@code seed}. */
    MemoryObj chunk(TensorShape shape, long seed) {
        return track(DiskTestChunks.chunk(alloc, shape, seed));
    }

    /** A tracked, unfilled object. */
    MemoryObj allocate(TensorShape shape, DType dtype, MemoryFormat format) {
        return track(DiskTestChunks.allocate(alloc, shape, dtype, format));
    }
}
