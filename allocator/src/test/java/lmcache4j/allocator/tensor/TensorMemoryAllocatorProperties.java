package lmcache4j.allocator.tensor;

import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.state.ActionChain;

import lmcache4j.allocator.AllocatorHarness;
import lmcache4j.allocator.HostArenaOptions;
import lmcache4j.allocator.host.HostArena;

/**
 * Stateful properties of {@link TensorMemoryAllocator}: every placement equals LMCache's linear
 * first-fit scan ({@link LinearFirstFitModel}), and the lifecycle invariants hold after every
 * action, over real mmap memory and in strict mode.
 */
class TensorMemoryAllocatorProperties {
    private static final long CAPACITY = 4L << 20; // ~16–40 full chunks: enough to fill and fragment

    @Property
    void overMappedMemory(@ForAll("mapped") ActionChain<AllocatorHarness> chain) {
        AllocatorHarness.run(chain);
    }

    @Property
    void inStrictMode(@ForAll("strict") ActionChain<AllocatorHarness> chain) {
        AllocatorHarness.run(chain);
    }

    @Property
    void withA512ByteAlignment(@ForAll("earlyLmcacheAlignment") ActionChain<AllocatorHarness> chain) {
        AllocatorHarness.run(chain);
    }

    @Provide
    Arbitrary<ActionChain<AllocatorHarness>> mapped() {
        return AllocatorHarness.chains(() -> new AllocatorHarness(
                TensorMemoryAllocator.create("mapped", HostArena.allocate(CAPACITY, HostArenaOptions.DEFAULT.withHugePages(false)),
                        TensorMemoryAllocator.DEFAULT_ALIGNMENT),
                TensorMemoryAllocator.strict("foreign", 1 << 20, 4096),
                new LinearFirstFitOracle(CAPACITY), TensorMemoryAllocator.DEFAULT_ALIGNMENT, 0));
    }

    @Provide
    Arbitrary<ActionChain<AllocatorHarness>> strict() {
        return AllocatorHarness.chains(() -> new AllocatorHarness(
                TensorMemoryAllocator.strict("strict", CAPACITY, TensorMemoryAllocator.DEFAULT_ALIGNMENT),
                TensorMemoryAllocator.strict("foreign", 1 << 20, 4096),
                new LinearFirstFitOracle(CAPACITY), TensorMemoryAllocator.DEFAULT_ALIGNMENT, 0));
    }

    @Provide
    Arbitrary<ActionChain<AllocatorHarness>> earlyLmcacheAlignment() {
        return AllocatorHarness.chains(() -> new AllocatorHarness(
                TensorMemoryAllocator.strict("strict-512", CAPACITY, 512),
                TensorMemoryAllocator.strict("foreign", 1 << 20, 4096),
                new LinearFirstFitOracle(CAPACITY), 512, 0));
    }
}
