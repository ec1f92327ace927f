package lmcache4j.engine.storage.cpu;

import static lmcache4j.engine.storage.TestChunks.key;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

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
 * The eviction policies lmcache4j added (S3FIFO, ARC, KV_ADAPTIVE) served by a real CPU tier of 4
 * chunks under random request traffic: requests that look up a prefix chain (pinning what hits, so
 * the policy is told of the lookup), store the rest (allocation evicts through the policy), and
 * unpin later; hits held, released, removed, cleared. After every action: the tier never holds more
 * chunks than its memory, no pinned chunk was evicted, every evicted chunk's memory went back to the
 * allocator (live objects are exactly the cached ones plus those the test holds), and the policy
 * tracks exactly the cached keys. Keys form three chains under one shared root, as prompts that
 * share a system prompt.
 */
class EvictionPolicyProperties {
    private static final int CAPACITY = 4;
    private static final int CHAINS = 3;
    private static final int DEPTH = 5;

    /** Chunk {@code depth} of chain {@code chain}; depth 0 is the root all chains share. */
    static int id(int chain, int depth) {
        return depth == 0 ? 0 : 1 + chain * DEPTH + depth;
    }

    static final class Harness {
        final LocalCpuBackend cpu;
        final List<Integer> pinned = new ArrayList<>();
        final List<MemoryObj> held = new ArrayList<>();

        Harness(String policy) {
            cpu = TestChunks.cpuTier(CAPACITY, policy, 0.05);
        }

        /** A request for the first {@code length} chunks of {@code chain}: a pinning lookup, then a store of the rest. */
        void request(int chain, int length) {
            List<CacheKey> keys = new ArrayList<>();
            for (int d = 0; d < length; d++) {
                keys.add(key(id(chain, d)));
            }
            int hits = cpu.batchedContains(keys, true);
            for (int d = 0; d < hits; d++) {
                pinned.add(id(chain, d));
            }
            cpu.touchCache();
            for (int d = hits; d < length; d++) {
                if (cpu.contains(keys.get(d), false)) {
                    continue;
                }
                Optional<MemoryObj> obj = TestChunks.chunk(cpu, id(chain, d), AllocationMode.EVICT);
                if (obj.isEmpty()) {
                    break; // everything is pinned or held: a store keeps what it has
                }
                cpu.batchedSubmitPut(List.of(keys.get(d)), List.of(obj.get()));
                obj.get().release();
            }
        }

        void unpin(int pick) {
            if (!pinned.isEmpty()) {
                int i = pinned.remove(pick % pinned.size());
                assertTrue(cpu.unpin(key(i)), "pinned chunk " + i + " must still be cached");
            }
        }

        void hold(int chain, int depth) {
            cpu.getBlocking(key(id(chain, depth))).ifPresent(o -> {
                assertEquals((byte) id(chain, depth), (byte) TestChunks.marker(o), "a chunk holds another chunk's bytes");
                held.add(o);
            });
        }

        void release(int pick) {
            if (!held.isEmpty()) {
                held.remove(pick % held.size()).release();
            }
        }

        void remove(int chain, int depth) {
            int id = id(chain, depth);
            if (!pinned.contains(id)) {
                cpu.remove(key(id));
            }
        }

        void check() {
            assertTrue(cpu.size() <= CAPACITY, "the tier holds " + cpu.size() + " chunks in memory for " + CAPACITY);
            for (int id : pinned) {
                assertTrue(cpu.contains(key(id), false), "pinned chunk " + id + " was evicted");
            }
            var stats = cpu.allocator().stats();
            java.util.Set<MemoryObj> extra = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
            held.stream().filter(o -> !cachedObject(o)).forEach(extra::add);
            long heldDistinct = extra.size();
            assertEquals(cpu.size() + heldDistinct, stats.liveObjects(),
                    "live objects must be the cached ones plus those held elsewhere: an evicted chunk was not freed");
            cpu.memcheck(); // the policy tracks exactly the cached keys; the allocator's books balance
        }

        /** Whether the tier still caches {@code o} itself (then it is one live object, not two). */
        private boolean cachedObject(MemoryObj o) {
            for (int c = 0; c < CHAINS; c++) {
                for (int d = 0; d < DEPTH; d++) {
                    Optional<MemoryObj> cached = cpu.getBlocking(key(id(c, d)));
                    if (cached.isPresent()) {
                        boolean same = cached.get() == o;
                        cached.get().release();
                        if (same) {
                            return true;
                        }
                    }
                }
            }
            return false;
        }

        void finish() {
            held.forEach(MemoryObj::release);
            held.clear(); // released: a chunk evicted while held is freed now, and no longer counts as held
            pinned.forEach(i -> cpu.unpin(key(i)));
            pinned.clear();
            check();
            cpu.close(); // fails, listing them, if a reference or pin leaked
        }
    }

    @Property(tries = 200)
    void s3fifo(@ForAll("s3fifoChains") ActionChain<Harness> chain) {
        chain.withInvariant(Harness::check).run().finish();
    }

    @Property(tries = 200)
    void arc(@ForAll("arcChains") ActionChain<Harness> chain) {
        chain.withInvariant(Harness::check).run().finish();
    }

    @Property(tries = 200)
    void kvAdaptive(@ForAll("kvAdaptiveChains") ActionChain<Harness> chain) {
        chain.withInvariant(Harness::check).run().finish();
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

    private static Arbitrary<ActionChain<Harness>> chains(String policy) {
        Arbitrary<Integer> chain = Arbitraries.integers().between(0, CHAINS - 1);
        Arbitrary<Integer> length = Arbitraries.integers().between(1, DEPTH);
        Arbitrary<Integer> depth = Arbitraries.integers().between(0, DEPTH - 1);
        Arbitrary<Integer> picks = Arbitraries.integers().between(0, 1000);
        return ActionChain.startWith(() -> new Harness(policy))
                .withAction(8, two(chain, length, "request", Harness::request))
                .withAction(5, one(picks, "unpin", Harness::unpin))
                .withAction(2, two(chain, depth, "hold", Harness::hold))
                .withAction(2, one(picks, "release", Harness::release))
                .withAction(1, two(chain, depth, "remove", Harness::remove))
                .withAction(1, one(picks, "clear", (h, i) -> h.cpu.clear()))
                .withMaxTransformations(120);
    }

    private interface Op1 {
        void apply(Harness h, int a);
    }

    private interface Op2 {
        void apply(Harness h, int a, int b);
    }

    private static Action.Independent<Harness> one(Arbitrary<Integer> args, String what, Op1 op) {
        return () -> args.map(a -> Transformer.mutate(what + " " + a, h -> op.apply(h, a)));
    }

    private static Action.Independent<Harness> two(Arbitrary<Integer> first, Arbitrary<Integer> second, String what, Op2 op) {
        return () -> net.jqwik.api.Combinators.combine(first, second).as((a, b) ->
                Transformer.mutate(what + " " + a + " " + b, h -> op.apply(h, a, b)));
    }
}
