package lmcache4j.engine;

import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import lmcache4j.allocator.DType;
import lmcache4j.allocator.MemoryFormat;
import lmcache4j.allocator.MemoryObj;
import lmcache4j.allocator.TensorShape;
import lmcache4j.engine.storage.AllocationMode;
import lmcache4j.engine.storage.MemoryProvider;
import lmcache4j.engine.key.CacheKey;
import lmcache4j.engine.storage.Prefetching;
import lmcache4j.engine.storage.StorageBackend;

/**
 * A complete lower tier (it keeps a heap copy of what it is given and reads it back into memory
 * from the engine's {@link MemoryProvider}, as the disk tier does)
 * whose prefetch loads run on a thread of their own and can be held back until {@link #open()},
 * and whose loads of chosen keys fail: the slow or failing tier of the prefetch tests.
 */
final class GatedTier implements StorageBackend, Prefetching {
    static final String NAME = "GatedTier";

    /** A stored chunk: its bytes and what an object needs to hold them again. */
    private record Copy(byte[] bytes, TensorShape shape, DType dtype, MemoryFormat format) {
    }

    private final Map<CacheKey, Copy> stored = new LinkedHashMap<>();
    private volatile MemoryProvider memory;
    private final Set<CacheKey> failing = new HashSet<>();
    private final CountDownLatch gate = new CountDownLatch(1);
    private final AtomicInteger loadsStarted = new AtomicInteger();

    /** Starts with its gate closed: loads wait for {@link #open()}. */
    GatedTier() {
    }

    /** The memory loads allocate from: the engine's CPU tier, known once the engine exists. */
    void useMemory(MemoryProvider memory) {
        this.memory = memory;
    }

    /** Lets every load (waiting or later) go on. */
    void open() {
        gate.countDown();
    }

    /** Loads of {@code key} fail from now on (after the gate), as a tier that breaks mid-prefetch. */
    synchronized void failOn(CacheKey key) {
        failing.add(key);
    }

    int loadsStarted() {
        return loadsStarted.get();
    }

    synchronized int size() {
        return stored.size();
    }

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public synchronized boolean contains(CacheKey key, boolean pin) {
        return stored.containsKey(key);
    }

    @Override
    public synchronized void batchedSubmitPut(List<? extends CacheKey> keys, List<MemoryObj> objs) {
        for (int i = 0; i < keys.size(); i++) {
            MemoryObj obj = objs.get(i);
            stored.putIfAbsent(keys.get(i), new Copy(obj.segment().asSlice(0, obj.byteSize()).toArray(ValueLayout.JAVA_BYTE),
                    obj.shape(), obj.dtype(), obj.format()));
        }
    }

    @Override
    public Optional<MemoryObj> getBlocking(CacheKey key) {
        Copy copy;
        synchronized (this) {
            copy = stored.get(key);
        }
        if (copy == null) {
            return Optional.empty();
        }
        Optional<MemoryObj> obj = memory.allocate(copy.shape(), copy.dtype(), copy.format(), AllocationMode.EVICT);
        obj.ifPresent(o -> MemorySegment.copy(MemorySegment.ofArray(copy.bytes()), 0, o.segment(), 0, copy.bytes().length));
        return obj;
    }

    @Override
    public Optional<Prefetching> prefetching() {
        return Optional.of(this);
    }

    @Override
    public CompletableFuture<Optional<MemoryObj>> prefetch(CacheKey key) {
        loadsStarted.incrementAndGet();
        CompletableFuture<Optional<MemoryObj>> result = new CompletableFuture<>();
        Thread.ofPlatform().daemon().name("gated-tier-load").start(() -> {
            try {
                if (!gate.await(30, TimeUnit.SECONDS)) {
                    result.completeExceptionally(new IllegalStateException("the test never opened the gate"));
                    return;
                }
                synchronized (this) {
                    if (failing.contains(key)) {
                        result.completeExceptionally(new java.io.IOException("the tier broke while loading " + key));
                        return;
                    }
                }
                result.complete(getBlocking(key));
            } catch (InterruptedException e) {
                result.completeExceptionally(e);
            }
        });
        return result;
    }

    @Override
    public synchronized boolean unpin(CacheKey key) {
        return stored.containsKey(key);
    }

    @Override
    public synchronized boolean remove(CacheKey key) {
        return stored.remove(key) != null;
    }

    @Override
    public void touchCache() {
    }

    @Override
    public synchronized void close() {
        stored.clear();
    }
}
