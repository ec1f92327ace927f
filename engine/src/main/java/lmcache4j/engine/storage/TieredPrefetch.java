package lmcache4j.engine.storage;

import java.lang.System.Logger.Level;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

import lmcache4j.allocator.MemoryObj;
import lmcache4j.engine.key.CacheKey;

/**
 * One prefetch of a request's prefix across every tier, run on the prefetch threads: each key is
 * taken from the highest tier that holds it (the CPU tier, then the others in search order), and
 * the search stops at the first key no tier holds. Keys the CPU tier holds are referenced at once;
 * the others are loaded concurrently, through the tier's {@link Prefetching} when it has one, else
 * by a blocking get on a prefetch thread. When every load has answered, the prefix is cut at the
 * first load that came back empty or failed; what arrived past it is released, what is in the
 * prefix is written into the CPU tier and handed to the caller with one reference each.
 */
final class TieredPrefetch {
    private static final System.Logger LOG = System.getLogger(TieredPrefetch.class.getName());

    private final CpuTier cpu;
    private final Supplier<List<StorageBackend>> activeTiers;
    private final Executor threads;
    private final BooleanSupplier closing;

    TieredPrefetch(CpuTier cpu, Supplier<List<StorageBackend>> activeTiers, Executor threads,
                   BooleanSupplier closing) {
        this.cpu = cpu;
        this.activeTiers = activeTiers;
        this.threads = threads;
        this.closing = closing;
    }

    /** A chunk on its way: the tier it comes from and its load. */
    private record Load(CacheKey key, String tier, CompletableFuture<Optional<MemoryObj>> object) {
    }

    /** Plans and starts the loads of {@code keys}; completes {@code result} (never exceptionally) when all answered. */
    void run(List<CacheKey> keys, CompletableFuture<PrefetchedPrefix> result) {
        List<Load> loads = new ArrayList<>(keys.size());
        try {
            List<StorageBackend> tiers = activeTiers.get();
            for (CacheKey key : keys) {
                if (closing.getAsBoolean()) {
                    break;
                }
                Optional<StorageBackend> holder = highestHolder(tiers, key);
                if (holder.isEmpty()) {
                    break; // prefix semantics: nothing past the first chunk no tier holds
                }
                loads.add(new Load(key, holder.get().name(), load(holder.get(), key)));
            }
        } catch (RuntimeException e) {
            LOG.log(Level.WARNING, "prefetch planning failed after " + loads.size() + " chunk(s): " + e, e);
        }
        CompletableFuture.allOf(loads.stream().map(Load::object).toArray(CompletableFuture[]::new))
                .whenComplete((ignored, failure) -> result.complete(assemble(loads)));
    }

    private static Optional<StorageBackend> highestHolder(List<StorageBackend> tiers, CacheKey key) {
        for (StorageBackend tier : tiers) {
            try {
                if (tier.contains(key, false)) {
                    return Optional.of(tier);
                }
            } catch (RuntimeException e) { // a tier that cannot answer does not hold the chunk
                LOG.log(Level.WARNING, tier.name() + " failed to answer whether it holds " + key + ": " + e);
            }
        }
        return Optional.empty();
    }

    private CompletableFuture<Optional<MemoryObj>> load(StorageBackend tier, CacheKey key) {
        if (tier == cpu) {
            return CompletableFuture.completedFuture(cpu.getBlocking(key)); // a reference: held against eviction
        }
        CompletableFuture<Optional<MemoryObj>> loading;
        try {
            Optional<Prefetching> prefetching = tier.prefetching();
            loading = prefetching.isPresent() ? prefetching.get().prefetch(key)
                    : CompletableFuture.supplyAsync(() -> tier.getBlocking(key), threads);
        } catch (RuntimeException e) {
            loading = CompletableFuture.failedFuture(e);
        }
        return loading.exceptionally(e -> {
            LOG.log(Level.WARNING, "prefetch of " + key + " from " + tier.name() + " failed, treated as a miss: " + e);
            return Optional.empty();
        });
    }

    private PrefetchedPrefix assemble(List<Load> loads) {
        List<CacheKey> keys = new ArrayList<>(loads.size());
        List<MemoryObj> objects = new ArrayList<>(loads.size());
        Map<String, Integer> byTier = new LinkedHashMap<>();
        boolean inPrefix = true;
        for (Load load : loads) {
            Optional<MemoryObj> obj = load.object().join(); // every load completes normally (see load)
            if (obj.isEmpty()) {
                inPrefix = false;
                continue;
            }
            if (!inPrefix || closing.getAsBoolean()) {
                obj.get().release(); // past a gap, or the tiers are closing: not part of the prefix
                continue;
            }
            if (!load.tier().equals(cpu.name())) {
                try {
                    cpu.batchedSubmitPut(List.of(load.key()), List.of(obj.get()));
                } catch (RuntimeException e) { // the caller still holds it; the retrieve uses it from there
                    LOG.log(Level.WARNING, "writing prefetched " + load.key() + " into the CPU tier failed: " + e);
                }
            }
            keys.add(load.key());
            objects.add(obj.get());
            byTier.merge(load.tier(), 1, Integer::sum);
        }
        return new PrefetchedPrefix(keys, objects, byTier);
    }
}
