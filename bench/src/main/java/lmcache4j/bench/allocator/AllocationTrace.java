package lmcache4j.bench.allocator;

import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.SplittableRandom;

import lmcache4j.allocator.DType;
import lmcache4j.allocator.MemoryFormat;
import lmcache4j.allocator.TensorShape;
import lmcache4j.allocator.tensor.internal.FreeBlockIndex;
import lmcache4j.allocator.tensor.TensorMemoryAllocator;

/**
 * A deterministic trace of KV-chunk allocations and frees, replayed identically against every
 * allocator of the allocator benchmark.
 *
 * <p>Requests are {@link MemoryFormat#KV_2LTD} {@code [2, layers, tokens, kv_hidden]} bfloat16
 * chunks of a few model shapes ({@link #MODELS}): mostly full 256-token chunks, some partial last
 * chunks of 1..255 tokens. The trace behaves like a KV cache under pressure:
 * <ol>
 *   <li><b>fill</b>: allocate until the pool is {@code occupancy} full (by bytes, 4 KiB-aligned as
 *       {@link TensorMemoryAllocator} rounds them);</li>
 *   <li><b>steady</b>: each request first evicts (frees) uniformly random live chunks until it fits
 *       under the occupancy target <em>and</em> first fit can place it, then allocates — so frees
 *       come in shuffled order, never LIFO or FIFO; the phase ends with exactly as many frees as
 *       allocations;</li>
 *   <li><b>drain</b>: frees every remaining chunk, in shuffled order.</li>
 * </ol>
 * Placement is simulated with the {@link FreeBlockIndex} that {@link TensorMemoryAllocator} uses
 * (first fit by lowest address over one region), so replaying the trace against a
 * {@code TensorMemoryAllocator} of {@link Config#poolBytes()} never fails an allocation.
 *
 * <p>The trace is a few primitive arrays: op {@code i} allocates request shape {@link #shape(int)}
 * into slot {@link #slot(int)} when the shape index is {@code >= 0}, and frees slot
 * {@link #slot(int)} when it is {@link #FREE}. A replay needs one array of {@link #slotCount()}
 * handles and allocates nothing but what the allocator under test does.
 */
public final class AllocationTrace {
    /** Shape index of a free op. */
    public static final int FREE = -1;
    /** Tokens in a full chunk (LMCache's default chunk size). */
    public static final int CHUNK_TOKENS = 256;
    public static final DType DTYPE = DType.BFLOAT16;
    public static final MemoryFormat FORMAT = MemoryFormat.KV_2LTD;
    /** The placement granularity of the simulation: the tensor allocator's default alignment. */
    public static final long ALIGNMENT = TensorMemoryAllocator.DEFAULT_ALIGNMENT;

    /**
     * A model whose per-rank KV chunk the trace requests.
     *
     * @param name     model and tensor-parallel degree, for reports
     * @param layers   transformer layers
     * @param kvHidden KV heads per rank × head dim
     * @param weight   relative frequency of its requests
     */
    public record Model(String name, int layers, int kvHidden, int weight) {
        /** The full chunk's shape, {@code [2, layers, 256, kvHidden]}. */
        public TensorShape fullChunk() {
            return TensorShape.of(2, layers, CHUNK_TOKENS, kvHidden);
        }
    }

    /**
     * Real models' per-rank KV chunk shapes, full chunks of 1 to 4 MiB in bfloat16. The allocator
     * never touches the bytes, so the pool is only virtual memory.
     */
    public static final List<Model> MODELS = List.of(
            new Model("Llama-3.2-1B TP8", 16, 64, 3),   // 16 layers, 8 KV heads × 64 / 8 ranks: 1 MiB
            new Model("Qwen2.5-0.5B TP2", 24, 64, 3),   // 24 layers, 2 KV heads × 64 / 2 ranks: 1.5 MiB
            new Model("Qwen3-0.6B TP8", 28, 128, 2),    // 28 layers, 8 KV heads × 128 / 8 ranks: 3.5 MiB
            new Model("Llama-3.1-8B TP8", 32, 128, 2)); // 32 layers, 8 KV heads × 128 / 8 ranks: 4 MiB

    /**
     * What to generate.
     *
     * @param seed            the random seed: equal configs give equal traces
     * @param steadyPairs     allocations (and as many frees) in the steady phase
     * @param poolBytes       the simulated pool
     * @param occupancy       the fraction of the pool held live, 0 &lt; occupancy &lt; 1
     * @param partialFraction the fraction of requests that are partial last chunks
     */
    public record Config(long seed, int steadyPairs, long poolBytes, double occupancy, double partialFraction) {
        public static final long DEFAULT_SEED = 42;
        public static final int DEFAULT_STEADY_PAIRS = 500_000;
        public static final long DEFAULT_POOL_BYTES = 2L << 30;
        public static final double DEFAULT_OCCUPANCY = 0.8;
        public static final double DEFAULT_PARTIAL_FRACTION = 0.3;

        public Config {
            if (steadyPairs <= 0) {
                throw new IllegalArgumentException("steady pairs must be positive, was " + steadyPairs);
            }
            if (!(occupancy > 0 && occupancy < 1)) {
                throw new IllegalArgumentException("occupancy must be in (0, 1), was " + occupancy);
            }
            if (!(partialFraction >= 0 && partialFraction <= 1)) {
                throw new IllegalArgumentException("partial fraction must be in [0, 1], was " + partialFraction);
            }
            long largest = MODELS.stream().mapToLong(m -> m.fullChunk().byteSize(DTYPE)).max().orElseThrow();
            if (poolBytes < 16 * largest) {
                throw new IllegalArgumentException("the pool must hold at least 16 of the largest chunk ("
                        + 16 * largest + " bytes), was " + poolBytes);
            }
        }

        /** The defaults with {@code seed} and {@code steadyPairs}. */
        public static Config of(long seed, int steadyPairs) {
            return new Config(seed, steadyPairs, DEFAULT_POOL_BYTES, DEFAULT_OCCUPANCY, DEFAULT_PARTIAL_FRACTION);
        }

        public Config withPoolBytes(long bytes) {
            return new Config(seed, steadyPairs, bytes, occupancy, partialFraction);
        }
    }

    private final Config config;
    private final TensorShape[] shapes;
    private final long[] shapeBytes;
    private final int[] opShape;
    private final int[] opSlot;
    private final int fillEnd;
    private final int steadyEnd;
    private final int slotCount;
    private final int liveAtSteadyStart;
    private final int maxLive;
    private final long pairs;
    private final long partialRequests;
    private final long requestedBytes;
    private final int maxFreeBlocks;

    private AllocationTrace(Config config, TensorShape[] shapes, long[] shapeBytes, int[] opShape, int[] opSlot,
                            int fillEnd, int steadyEnd, int slotCount, int liveAtSteadyStart, int maxLive, long pairs,
                            long partialRequests, long requestedBytes, int maxFreeBlocks) {
        this.config = config;
        this.shapes = shapes;
        this.shapeBytes = shapeBytes;
        this.opShape = opShape;
        this.opSlot = opSlot;
        this.fillEnd = fillEnd;
        this.steadyEnd = steadyEnd;
        this.slotCount = slotCount;
        this.liveAtSteadyStart = liveAtSteadyStart;
        this.maxLive = maxLive;
        this.pairs = pairs;
        this.partialRequests = partialRequests;
        this.requestedBytes = requestedBytes;
        this.maxFreeBlocks = maxFreeBlocks;
    }

    /** Generates the trace {@code config} describes. Deterministic. */
    public static AllocationTrace generate(Config config) {
        return new Generator(Objects.requireNonNull(config, "config")).run();
    }

    // ---- the trace ----------------------------------------------------------------------------

    public Config config() {
        return config;
    }

    /** Ops in the trace. */
    public int length() {
        return opShape.length;
    }

    /** Request shape index of op {@code i}, or {@link #FREE}. */
    public int shape(int i) {
        return opShape[i];
    }

    /** Slot op {@code i} allocates into or frees. */
    public int slot(int i) {
        return opSlot[i];
    }

    /** The op-kind/shape column: {@link #FREE} or a request shape index. Shared, do not modify. */
    int[] opShapes() {
        return opShape;
    }

    /** The slot column. Shared, do not modify. */
    int[] opSlots() {
        return opSlot;
    }

    /** Distinct request shapes (each model's full chunk and its 255 partial chunks). Shared, do not modify. */
    TensorShape[] shapes() {
        return shapes;
    }

    /** Bytes of each request shape ({@code shape × bfloat16}). Shared, do not modify. */
    long[] shapeBytes() {
        return shapeBytes;
    }

    /** Handles a replay needs at most at once: slot indices are below this. */
    public int slotCount() {
        return slotCount;
    }

    /** The end of the fill phase (exclusive): ops {@code [0, fillEnd)} only allocate. */
    public int fillEnd() {
        return fillEnd;
    }

    /** The end of the steady phase (exclusive); ops from here on only free. */
    public int steadyEnd() {
        return steadyEnd;
    }

    /** Allocate+free pairs in the whole trace: every allocation is freed before it ends. */
    public long pairs() {
        return pairs;
    }

    /** Allocate+free pairs in the steady phase (it holds exactly this many of each). */
    public long steadyPairs() {
        return (steadyEnd - fillEnd) / 2;
    }

    /** Live chunks when the steady phase starts. */
    public int liveAtSteadyStart() {
        return liveAtSteadyStart;
    }

    /** The most chunks live at once. */
    public int maxLive() {
        return maxLive;
    }

    /**
     * The most free blocks the simulated first-fit pool had at once during the steady phase: exactly
     * what a {@code TensorMemoryAllocator} of {@link Config#poolBytes()} goes through on replay.
     */
    public int maxFreeBlocks() {
        return maxFreeBlocks;
    }

    /** Requests that were partial last chunks. */
    public long partialRequests() {
        return partialRequests;
    }

    /** Mean bytes per request. */
    public double meanRequestBytes() {
        return (double) requestedBytes / pairs;
    }

    /** The largest request: one full chunk of the largest model. */
    public long largestRequestBytes() {
        return Arrays.stream(shapeBytes).max().orElseThrow();
    }

    /** The shape of the largest request (the paged allocator's page). */
    public TensorShape largestShape() {
        int best = 0;
        for (int i = 1; i < shapes.length; i++) {
            if (shapeBytes[i] > shapeBytes[best]) {
                best = i;
            }
        }
        return shapes[best];
    }

    @Override
    public String toString() {
        return String.format("AllocationTrace[seed %d, %d pairs (%d steady), %d ops, %d live at steady start, "
                        + "max %d live, %.0f%% partial, mean request %.2f MiB, max %d free blocks in first fit]",
                config.seed(), pairs, steadyPairs(), length(), liveAtSteadyStart, maxLive,
                100.0 * partialRequests / pairs, meanRequestBytes() / (1 << 20), maxFreeBlocks);
    }

    // ---- generation ---------------------------------------------------------------------------

    private static final class Generator {
        private final Config config;
        private final SplittableRandom random;
        private final TensorShape[] shapes;
        private final long[] shapeBytes;
        private final int[] cumulativeWeight;
        private final FreeBlockIndex placement = new FreeBlockIndex();
        private final long targetBytes;

        private int[] opShape = new int[1 << 16];
        private int[] opSlot = new int[1 << 16];
        private int length;

        // live chunks: dense list for uniform random eviction, with each slot's position in it
        private int[] liveSlots = new int[1024];
        private int liveCount;
        private int[] positionOfSlot = new int[1024];
        private long[] offsetOfSlot = new long[1024];
        private long[] sizeOfSlot = new long[1024];
        private int[] freeSlots = new int[1024];
        private int freeSlotCount;
        private int slotCount;
        private long usedBytes;
        private int maxLive;
        private long partialRequests;
        private long requestedBytes;
        private long allocations;
        private int maxFreeBlocks;
        private boolean steady;

        Generator(Config config) {
            this.config = config;
            this.random = new SplittableRandom(config.seed());
            this.targetBytes = (long) (config.poolBytes() * config.occupancy());
            int perModel = CHUNK_TOKENS; // index 0: full chunk; t in 1..255: t tokens
            shapes = new TensorShape[MODELS.size() * perModel];
            shapeBytes = new long[shapes.length];
            cumulativeWeight = new int[MODELS.size()];
            int weight = 0;
            for (int m = 0; m < MODELS.size(); m++) {
                TensorShape full = MODELS.get(m).fullChunk();
                for (int t = 0; t < perModel; t++) {
                    TensorShape s = t == 0 ? full : full.withDim(FORMAT.tokenDim(), t);
                    shapes[m * perModel + t] = s;
                    shapeBytes[m * perModel + t] = s.byteSize(DTYPE);
                }
                weight += MODELS.get(m).weight();
                cumulativeWeight[m] = weight;
            }
            placement.free(0, config.poolBytes());
        }

        AllocationTrace run() {
            // fill: allocate until the next request would pass the occupancy target
            int next = drawRequest();
            while (usedBytes + aligned(next) <= targetBytes) {
                if (!tryAllocate(next)) {
                    throw new IllegalStateException("the pool fragmented before reaching the occupancy target");
                }
                next = drawRequest();
            }
            int fillEnd = length;
            int liveAtSteadyStart = liveCount;
            steady = true;

            // steady: evict random live chunks until the request fits, then allocate it
            long steadyAllocs = 0;
            long steadyFrees = 0;
            boolean first = true;
            while (steadyAllocs < config.steadyPairs()) {
                int request = first ? next : drawRequest();
                first = false;
                while (usedBytes + aligned(request) > targetBytes) {
                    freeRandom();
                    steadyFrees++;
                }
                while (!tryAllocate(request)) {
                    freeRandom(); // first fit found no hole big enough: evict more
                    steadyFrees++;
                }
                steadyAllocs++;
            }
            // balance, so the steady phase holds exactly as many frees as allocations
            while (steadyFrees < steadyAllocs) {
                freeRandom();
                steadyFrees++;
            }
            while (steadyAllocs < steadyFrees) {
                int request = drawRequest();
                while (!tryAllocate(request)) {
                    request = drawRequest(); // no eviction here: that would unbalance again
                }
                steadyAllocs++;
            }
            int steadyEnd = length;
            steady = false;

            // drain: free everything left, in shuffled order
            while (liveCount > 0) {
                freeRandom();
            }
            return new AllocationTrace(config, shapes, shapeBytes, Arrays.copyOf(opShape, length),
                    Arrays.copyOf(opSlot, length), fillEnd, steadyEnd, slotCount, liveAtSteadyStart, maxLive,
                    allocations, partialRequests, requestedBytes, maxFreeBlocks);
        }

        /** A request shape index: a model by weight, then a full chunk or a partial one of 1..255 tokens. */
        private int drawRequest() {
            int w = random.nextInt(cumulativeWeight[cumulativeWeight.length - 1]);
            int model = 0;
            while (w >= cumulativeWeight[model]) {
                model++;
            }
            int tokens = random.nextDouble() < config.partialFraction() ? 1 + random.nextInt(CHUNK_TOKENS - 1) : 0;
            return model * CHUNK_TOKENS + tokens;
        }

        private long aligned(int request) {
            return (shapeBytes[request] + ALIGNMENT - 1) & -ALIGNMENT;
        }

        private boolean tryAllocate(int request) {
            long size = aligned(request);
            long offset = placement.allocateFirstFit(size);
            if (offset < 0) {
                return false;
            }
            int slot = takeSlot();
            offsetOfSlot[slot] = offset;
            sizeOfSlot[slot] = size;
            if (liveCount == liveSlots.length) {
                liveSlots = Arrays.copyOf(liveSlots, liveCount * 2);
            }
            positionOfSlot[slot] = liveCount;
            liveSlots[liveCount++] = slot;
            usedBytes += size;
            maxLive = Math.max(maxLive, liveCount);
            allocations++;
            requestedBytes += shapeBytes[request];
            if (request % CHUNK_TOKENS != 0) {
                partialRequests++;
            }
            append(request, slot);
            return true;
        }

        private void freeRandom() {
            int position = random.nextInt(liveCount);
            int slot = liveSlots[position];
            int last = liveSlots[--liveCount];
            liveSlots[position] = last;
            positionOfSlot[last] = position;
            placement.free(offsetOfSlot[slot], sizeOfSlot[slot]);
            usedBytes -= sizeOfSlot[slot];
            if (freeSlotCount == freeSlots.length) {
                freeSlots = Arrays.copyOf(freeSlots, freeSlotCount * 2);
            }
            freeSlots[freeSlotCount++] = slot;
            append(FREE, slot);
            if (steady) {
                maxFreeBlocks = Math.max(maxFreeBlocks, placement.blockCount());
            }
        }

        private int takeSlot() {
            if (freeSlotCount > 0) {
                return freeSlots[--freeSlotCount];
            }
            int slot = slotCount++;
            if (slot == positionOfSlot.length) {
                positionOfSlot = Arrays.copyOf(positionOfSlot, slot * 2);
                offsetOfSlot = Arrays.copyOf(offsetOfSlot, slot * 2);
                sizeOfSlot = Arrays.copyOf(sizeOfSlot, slot * 2);
            }
            return slot;
        }

        private void append(int shape, int slot) {
            if (length == opShape.length) {
                opShape = Arrays.copyOf(opShape, length * 2);
                opSlot = Arrays.copyOf(opSlot, length * 2);
            }
            opShape[length] = shape;
            opSlot[length] = slot;
            length++;
        }
    }
}
