package lmcache4j.engine.storage.cpu;

import static lmcache4j.engine.storage.TestChunks.key;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;

import lmcache4j.allocator.MemoryObj;
import lmcache4j.engine.key.CacheKey;
import lmcache4j.engine.storage.AllocationMode;
import lmcache4j.engine.storage.TestChunks;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.state.Action;
import net.jqwik.api.state.ActionChain;
import net.jqwik.api.state.Transformer;

/**
 * Random interleavings of store, get, lookup-with-pin, unpin, remove, touch and clear on a CPU
 * tier too small for the keys (4 chunks, 8 keys), under every policy. After every action: the
 * allocator's invariants hold, the policy tracks exactly the cached keys, every object read holds
 * the bytes stored under its key, and prefix answers only name keys that were stored and not
 * removed. At the end, releasing what the test holds and closing the tier proves no reference or
 * pin leaked.
 */
class LocalCpuBackendProperties {
    private static final int KEYS = 8;

    static final class Harness {
        final LocalCpuBackend cpu;
        final Set<Integer> mayBePresent = new HashSet<>();
        final List<MemoryObj> held = new ArrayList<>();
        final List<Integer> pinned = new ArrayList<>();

        Harness(String policy) {
            cpu = TestChunks.cpuTier(4, policy, 0.05);
        }

        void store(int i) {
            Optional<MemoryObj> obj = TestChunks.chunk(cpu, i, AllocationMode.EVICT);
            obj.ifPresent(o -> {
                cpu.batchedSubmitPut(List.of(key(i)), List.of(o));
                o.release();
                mayBePresent.add(i);
            });
        }

        void get(int i, boolean hold) {
            cpu.getBlocking(key(i)).ifPresent(o -> {
                assertTrue(mayBePresent.contains(i), "got key " + i + " which was never stored or was removed");
                assertEquals(i, TestChunks.marker(o), "key " + i + " holds another chunk's bytes");
                if (hold) {
                    held.add(o);
                } else {
                    o.release();
                }
            });
        }

        void lookup(int length) {
            List<CacheKey> keys = new ArrayList<>();
            for (int i = 0; i < length; i++) {
                keys.add(key(i));
            }
            int hits = cpu.batchedContains(keys, true);
            for (int i = 0; i < hits; i++) {
                assertTrue(mayBePresent.contains(i), "prefix names key " + i + " which was never stored");
                pinned.add(i);
            }
            assertTrue(hits == length || !cpu.contains(key(hits), false), "the prefix stopped before a present key");
        }

        void unpin(int pick) {
            if (!pinned.isEmpty()) {
                int i = pinned.remove(pick % pinned.size());
                assertTrue(cpu.unpin(key(i)), "a pinned key must still be cached");
            }
        }

        void releaseHeld(int pick) {
            if (!held.isEmpty()) {
                held.remove(pick % held.size()).release();
            }
        }

        void remove(int i) {
            if (pinned.contains(i)) {
                return; // the test keeps its pins balanced against cached objects
            }
            cpu.remove(key(i));
            mayBePresent.remove(i);
        }

        void clear() {
            long tokens = cpu.clear();
            assertEquals(0, tokens % 256);
            for (int i = 0; i < KEYS; i++) {
                if (!cpu.contains(key(i), false)) {
                    mayBePresent.remove(i);
                }
            }
        }

        void check() {
            cpu.memcheck();
            var stats = cpu.allocator().stats();
            assertTrue(stats.liveObjects() >= cpu.size() && stats.liveObjects() <= cpu.size() + held.size(),
                    "live objects " + stats.liveObjects() + " vs cached " + cpu.size() + " + held " + held.size());
            assertEquals(stats.capacityBytes(), stats.usedBytes() + stats.freeBytes());
        }

        void finish() {
            held.forEach(MemoryObj::release);
            pinned.forEach(i -> cpu.unpin(key(i)));
            cpu.touchCache();
            check();
            cpu.close(); // fails, listing them, if any reference or pin leaked
        }
    }

    @Property
    void lru(@ForAll("lruChains") ActionChain<Harness> chain) {
        chain.withInvariant(Harness::check).run().finish();
    }

    @Property
    void lfu(@ForAll("lfuChains") ActionChain<Harness> chain) {
        chain.withInvariant(Harness::check).run().finish();
    }

    @Property
    void fifoAndMru(@ForAll("fifoChains") ActionChain<Harness> fifo, @ForAll("mruChains") ActionChain<Harness> mru) {
        fifo.withInvariant(Harness::check).run().finish();
        mru.withInvariant(Harness::check).run().finish();
    }

    @Property
    void s3fifoArcAndKvAdaptive(@ForAll("s3fifoChains") ActionChain<Harness> s3fifo, @ForAll("arcChains") ActionChain<Harness> arc,
                                @ForAll("kvAdaptiveChains") ActionChain<Harness> kv) {
        s3fifo.withInvariant(Harness::check).run().finish();
        arc.withInvariant(Harness::check).run().finish();
        kv.withInvariant(Harness::check).run().finish();
    }

    @Provide
    Arbitrary<ActionChain<Harness>> s3fifoChains() {
        return chains("S3FIFO");
    }

    @Provide
    Arbitrary<ActionChain<Harness>> arcChains() {
        return chains("ARC");
    }

    @Provide
    Arbitrary<ActionChain<Harness>> kvAdaptiveChains() {
        return chains("KV_ADAPTIVE");
    }

    @Provide
    Arbitrary<ActionChain<Harness>> lruChains() {
        return chains("LRU");
    }

    @Provide
    Arbitrary<ActionChain<Harness>> lfuChains() {
        return chains("LFU");
    }

    @Provide
    Arbitrary<ActionChain<Harness>> fifoChains() {
        return chains("FIFO");
    }

    @Provide
    Arbitrary<ActionChain<Harness>> mruChains() {
        return chains("MRU");
    }

    private static Arbitrary<ActionChain<Harness>> chains(String policy) {
        Arbitrary<Integer> keys = Arbitraries.integers().between(0, KEYS - 1);
        Arbitrary<Integer> picks = Arbitraries.integers().between(0, 1000);
        return ActionChain.startWith(() -> new Harness(policy))
                .withAction(5, act(keys, "store", Harness::store))
                .withAction(3, act(keys, "get", (h, i) -> h.get(i, false)))
                .withAction(1, act(keys, "get and hold", (h, i) -> h.get(i, true)))
                .withAction(3, act(Arbitraries.integers().between(1, KEYS), "lookup with pin", Harness::lookup))
                .withAction(3, act(picks, "unpin", Harness::unpin))
                .withAction(2, act(picks, "release held", Harness::releaseHeld))
                .withAction(1, act(keys, "remove", Harness::remove))
                .withAction(2, act(picks, "touch", (h, i) -> h.cpu.touchCache()))
                .withAction(1, act(picks, "clear", (h, i) -> h.clear()))
                .withMaxTransformations(80);
    }

    private interface Op {
        void apply(Harness h, int arg);
    }

    private static Action.Independent<Harness> act(Arbitrary<Integer> args, String what, Op op) {
        return () -> args.map(a -> Transformer.mutate(what + " " + a, h -> op.apply(h, a)));
    }
}
