package lmcache4j.allocator.pool;

import lmcache4j.allocator.AllocatorHarness;
import lmcache4j.allocator.HostArenaOptions;
import lmcache4j.allocator.host.HostArena;
import lmcache4j.allocator.tensor.LinearFirstFitOracle;
import lmcache4j.allocator.tensor.TensorMemoryAllocator;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.state.ActionChain;

/** The stateful allocator properties for the mixed pool and the lazily growing pool. */
class PoolProperties {
    private static final long CAPACITY = 4L << 20;
    private static final HostArenaOptions PLAIN = HostArenaOptions.DEFAULT.withHugePages(false);

    @Property
    void mixedPoolOverATensorPool(@ForAll("mixed") ActionChain<AllocatorHarness> chain) {
        AllocatorHarness.run(chain);
    }

    @Property
    void lazilyGrowingPool(@ForAll("lazy") ActionChain<AllocatorHarness> chain) {
        AllocatorHarness.run(chain);
    }

    @Provide
    Arbitrary<ActionChain<AllocatorHarness>> mixed() {
        return AllocatorHarness.chains(() -> new AllocatorHarness(
                new MixedMemoryAllocator("mixed", TensorMemoryAllocator.create("mixed/kv",
                        HostArena.allocate(CAPACITY, PLAIN), TensorMemoryAllocator.DEFAULT_ALIGNMENT)),
                TensorMemoryAllocator.strict("foreign", 1 << 20, 4096),
                new LinearFirstFitOracle(CAPACITY), TensorMemoryAllocator.DEFAULT_ALIGNMENT, 0));
    }

    @Provide
    Arbitrary<ActionChain<AllocatorHarness>> lazy() {
        return AllocatorHarness.chains(() -> new AllocatorHarness(
                new LazyGrowingAllocator("lazy", CAPACITY, 4096, 0.2, 0.1, 0.5, bytes -> HostArena.allocate(bytes, PLAIN)),
                TensorMemoryAllocator.strict("foreign", 1 << 20, 4096),
                null, TensorMemoryAllocator.DEFAULT_ALIGNMENT, 0));
    }
}
