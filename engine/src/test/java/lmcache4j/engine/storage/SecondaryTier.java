package lmcache4j.engine.storage;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import lmcache4j.allocator.MemoryObj;
import lmcache4j.engine.key.CacheKey;

/**
 * A minimal, complete lower tier for manager tests: keeps objects by reference in insertion order,
 * honouring the SPI's reference rules. With an own allocator it stands for a device-side tier.
 */
final class SecondaryTier implements StorageBackend {
    private final String name;
    private final Map<CacheKey, MemoryObj> stored = new LinkedHashMap<>();
    private final AllocatorBackend own;
    private volatile boolean local = true;
    private int containsEachCalls;

    SecondaryTier(String name, AllocatorBackend own) {
        this.name = name;
        this.own = own;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public synchronized boolean contains(CacheKey key, boolean pin) {
        MemoryObj obj = stored.get(key);
        if (obj != null && pin) {
            obj.pin();
        }
        return obj != null;
    }

    @Override
    public synchronized boolean[] containsEach(List<? extends CacheKey> keys) {
        containsEachCalls++;
        return StorageBackend.super.containsEach(keys);
    }

    @Override
    public boolean isLocal() {
        return local;
    }

    /** From now on the tier answers as a remote store would ({@link #isLocal()} false). */
    synchronized SecondaryTier asRemote() {
        local = false;
        return this;
    }

    /** How often {@link #containsEach} was asked. */
    synchronized int containsEachCalls() {
        return containsEachCalls;
    }

    @Override
    public synchronized void batchedSubmitPut(List<? extends CacheKey> keys, List<MemoryObj> objs) {
        for (int i = 0; i < keys.size(); i++) {
            if (!stored.containsKey(keys.get(i))) {
                stored.put(keys.get(i), objs.get(i).retain());
            }
        }
    }

    @Override
    public synchronized Optional<MemoryObj> getBlocking(CacheKey key) {
        MemoryObj obj = stored.get(key);
        return obj == null ? Optional.empty() : Optional.of(obj.retain());
    }

    @Override
    public synchronized boolean unpin(CacheKey key) {
        MemoryObj obj = stored.get(key);
        if (obj == null || obj.pinCount() == 0) {
            return false;
        }
        obj.unpin();
        return true;
    }

    @Override
    public synchronized boolean remove(CacheKey key) {
        MemoryObj obj = stored.remove(key);
        if (obj != null) {
            obj.release();
        }
        return obj != null;
    }

    @Override
    public Optional<AllocatorBackend> ownAllocator() {
        return Optional.ofNullable(own);
    }

    @Override
    public void touchCache() {
    }

    synchronized List<CacheKey> keys() {
        return List.copyOf(stored.keySet());
    }

    synchronized MemoryObj peek(CacheKey key) {
        return stored.get(key);
    }

    @Override
    public synchronized void close() {
        stored.values().forEach(MemoryObj::release);
        stored.clear();
    }
}
