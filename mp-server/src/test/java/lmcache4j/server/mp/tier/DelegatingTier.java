package lmcache4j.server.mp.tier;

import java.util.List;
import java.util.Optional;

import lmcache4j.allocator.MemoryObj;
import lmcache4j.engine.key.CacheKey;
import lmcache4j.engine.storage.Prefetching;
import lmcache4j.engine.storage.StorageBackend;
import lmcache4j.engine.storage.disk.LocalDiskBackend;

/** A real disk tier with a fault put in front of it: each test overrides what it breaks or slows. */
abstract class DelegatingTier implements StorageBackend {
    final LocalDiskBackend tier;

    DelegatingTier(LocalDiskBackend tier) {
        this.tier = tier;
    }

    @Override
    public String name() {
        return "faulty " + tier.name();
    }

    @Override
    public boolean isLocal() {
        return true;
    }

    @Override
    public Optional<Prefetching> prefetching() {
        return tier.prefetching();
    }

    @Override
    public boolean contains(CacheKey key, boolean pin) {
        return tier.contains(key, pin);
    }

    @Override
    public void batchedSubmitPut(List<? extends CacheKey> keys, List<MemoryObj> objs) {
        tier.batchedSubmitPut(keys, objs);
    }

    @Override
    public Optional<MemoryObj> getBlocking(CacheKey key) {
        return tier.getBlocking(key);
    }

    @Override
    public boolean unpin(CacheKey key) {
        return tier.unpin(key);
    }

    @Override
    public boolean remove(CacheKey key) {
        return tier.remove(key);
    }

    @Override
    public void touchCache() {
        tier.touchCache();
    }

    @Override
    public void close() {
        tier.close();
    }
}
