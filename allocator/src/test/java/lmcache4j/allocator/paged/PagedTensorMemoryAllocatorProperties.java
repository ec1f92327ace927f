package lmcache4j.allocator.paged;

import java.util.ArrayDeque;

import lmcache4j.allocator.AllocatorHarness;
import lmcache4j.allocator.DType;
import lmcache4j.allocator.HostArenaOptions;
import lmcache4j.allocator.PlacementOracle;
import lmcache4j.allocator.TensorShape;
import lmcache4j.allocator.host.HostArena;
import lmcache4j.allocator.tensor.TensorMemoryAllocator;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.state.ActionChain;

/** Stateful properties of {@link PagedTensorMemoryAllocator} against a FIFO model of free pages. */
class PagedTensorMemoryAllocatorProperties {
    /** The largest chunk the harness allocates: 256 tokens of model 1 ([2, 3, 256, 128] bf16). */
    private static final TensorShape PAGE = TensorShape.of(2, 3, 256, 128);
    private static final long PAGE_BYTES = PAGE.byteSize(DType.BFLOAT16);
    private static final int PAGES = 24;

    /** LMCache's deque of free pages: pop left, append on free. */
    static final class FifoPages implements PlacementOracle {
        private final ArrayDeque<Long> free = new ArrayDeque<>();

        FifoPages(int pages) {
            for (long i = 0; i < pages; i++) {
                free.add(i * PAGE_BYTES);
            }
        }

        @Override
        public long allocate(long physical) {
            return free.isEmpty() ? -1 : free.pollFirst();
        }

        @Override
        public boolean allocateBatch(long unit, int count, long[] out) {
            if (free.size() < count) {
                return false;
            }
            for (int i = 0; i < count; i++) {
                out[i] = free.pollFirst();
            }
            return true;
        }

        @Override
        public void free(long address, long physical) {
            free.addLast(address);
        }
    }

    @Property
    void overMappedMemory(@ForAll("mapped") ActionChain<AllocatorHarness> chain) {
        AllocatorHarness.run(chain);
    }

    @Property
    void inStrictMode(@ForAll("strict") ActionChain<AllocatorHarness> chain) {
        AllocatorHarness.run(chain);
    }

    @Provide
    Arbitrary<ActionChain<AllocatorHarness>> mapped() {
        return AllocatorHarness.chains(() -> new AllocatorHarness(
                PagedTensorMemoryAllocator.create("paged", HostArena.allocate(PAGE_BYTES * PAGES,
                        HostArenaOptions.DEFAULT.withHugePages(false)), PAGE, DType.BFLOAT16),
                TensorMemoryAllocator.strict("foreign", 1 << 20, 4096),
                new FifoPages(PAGES), 64, PAGE_BYTES));
    }

    @Provide
    Arbitrary<ActionChain<AllocatorHarness>> strict() {
        return AllocatorHarness.chains(() -> new AllocatorHarness(
                PagedTensorMemoryAllocator.strict("paged-strict", PAGES, PAGE, DType.BFLOAT16),
                TensorMemoryAllocator.strict("foreign", 1 << 20, 4096),
                new FifoPages(PAGES), 64, PAGE_BYTES));
    }
}
