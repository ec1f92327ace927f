package lmcache4j.allocator.tensor;

import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;

import lmcache4j.allocator.tensor.internal.FreeBlockIndex;

/**
 * A deliberately literal transcription of LMCache's explicit free list ({@code TensorMemoryAllocator}
 * / 2026 {@code AddressManager}): an {@link ArrayList} of blocks sorted by start, a linear first-fit
 * scan, neighbour coalescing found by binary search, the greedy batched carve and the
 * {@code _can_merge_with_prev/_succ} hooks driven by segment boundaries. It is the oracle that
 * {@link FreeBlockIndex} must match decision for decision; speed is no concern here.
 */
final class LinearFirstFitModel {

    /** LMCache's {@code FreeBlock}. */
    record Block(long start, long size) {
        long end() {
            return start + size;
        }
    }

    private final List<Block> blocks = new ArrayList<>();
    private final TreeSet<Long> boundaries = new TreeSet<>();

    /** Marks a segment boundary; a free block spanning it is split there, as in {@link FreeBlockIndex#addBoundary}. */
    void addBoundary(long address) {
        if (address < 0) {
            throw new IllegalArgumentException("boundary address must be >= 0, was " + address);
        }
        if (!boundaries.add(address)) {
            return;
        }
        for (int i = 0; i < blocks.size(); i++) {
            Block b = blocks.get(i);
            if (b.start() < address && address < b.end()) {
                blocks.set(i, new Block(b.start(), address - b.start()));
                blocks.add(i + 1, new Block(address, b.end() - address));
                return;
            }
        }
    }

    /** LMCache's {@code free}, preceded by a double-free check and a split at interior boundaries. */
    void free(long start, long size) {
        if (size <= 0 || start < 0 || start > Long.MAX_VALUE - size) {
            throw new IllegalArgumentException("bad block [" + start + ", +" + size + ")");
        }
        long end = start + size;
        // Blocks are disjoint and sorted, so only the last one starting before `end` can overlap.
        int i = insertionPoint(end - 1) - 1;
        if (i >= 0 && blocks.get(i).end() > start) {
            Block b = blocks.get(i);
            throw new IllegalStateException("double free: [" + start + ", " + end + ") overlaps free block ["
                    + b.start() + ", " + b.end() + ")");
        }
        long pieceStart = start;
        for (long boundary : boundaries.subSet(start, false, end, false)) {
            coalesce(new Block(pieceStart, boundary - pieceStart));
            pieceStart = boundary;
        }
        coalesce(new Block(pieceStart, end - pieceStart));
    }

    /** The spec's coalescing step, verbatim. */
    private void coalesce(Block block) {
        int succIndex = insertionPoint(block.start());
        Block prev = succIndex > 0 ? blocks.get(succIndex - 1) : null;
        Block succ = succIndex < blocks.size() ? blocks.get(succIndex) : null;
        boolean mergePrev = prev != null && prev.end() == block.start() && canMergeWithPrev(block);
        boolean mergeSucc = succ != null && block.end() == succ.start() && canMergeWithSucc(block);
        if (mergePrev && mergeSucc) {
            // prev absorbs both, succ removed
            blocks.set(succIndex - 1, new Block(prev.start(), prev.size() + block.size() + succ.size()));
            blocks.remove(succIndex);
        } else if (mergePrev) {
            blocks.set(succIndex - 1, new Block(prev.start(), prev.size() + block.size()));
        } else if (mergeSucc) {
            // succ re-keyed to the new start and grown
            blocks.set(succIndex, new Block(block.start(), block.size() + succ.size()));
        } else {
            blocks.add(succIndex, block);
        }
    }

    private boolean canMergeWithPrev(Block block) {
        return !boundaries.contains(block.start());
    }

    private boolean canMergeWithSucc(Block block) {
        return !boundaries.contains(block.end());
    }

    /** Binary search: index of the first block starting after {@code start}. */
    private int insertionPoint(long start) {
        int lo = 0;
        int hi = blocks.size();
        while (lo < hi) {
            int mid = (lo + hi) >>> 1;
            if (blocks.get(mid).start() <= start) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        return lo;
    }

    /** First-fit scan in address order; remove the block and, if it was larger, insert the tail. */
    long allocateFirstFit(long size) {
        if (size <= 0) {
            throw new IllegalArgumentException("allocation size must be > 0, was " + size);
        }
        for (int i = 0; i < blocks.size(); i++) {
            Block b = blocks.get(i);
            if (b.size() >= size) {
                blocks.remove(i);
                if (b.size() > size) {
                    blocks.add(i, new Block(b.start() + size, b.size() - size));
                }
                return b.start();
            }
        }
        return -1;
    }

    /** 2026 AddressManager batched allocate: greedy carve in address order, all or nothing. */
    boolean allocateBatch(long unit, int count, long[] out) {
        if (unit <= 0 || count < 1 || out.length < count) {
            throw new IllegalArgumentException("bad batch: unit " + unit + ", count " + count + ", out " + out.length);
        }
        long available = 0;
        for (Block b : blocks) {
            available += b.size() / unit;
        }
        if (available < count) {
            return false;
        }
        int filled = 0;
        for (int i = 0; i < blocks.size() && filled < count; i++) {
            Block b = blocks.get(i);
            long slots = Math.min(b.size() / unit, count - filled);
            if (slots == 0) {
                continue;
            }
            for (int s = 0; s < slots; s++) {
                out[filled++] = b.start() + s * unit;
            }
            long taken = slots * unit;
            blocks.remove(i);
            if (b.size() > taken) {
                blocks.add(i, new Block(b.start() + taken, b.size() - taken));
            } else {
                i--;
            }
        }
        return true;
    }

    long freeBytes() {
        return blocks.stream().mapToLong(Block::size).sum();
    }

    int blockCount() {
        return blocks.size();
    }

    long largestBlock() {
        return blocks.stream().mapToLong(Block::size).max().orElse(0);
    }

    void forEach(FreeBlockIndex.BlockVisitor visitor) {
        for (Block b : blocks) {
            visitor.visit(b.start(), b.size());
        }
    }

    /** LMCache's memcheck: no two adjacent free blocks are coalescable. */
    boolean isFullyCoalesced() {
        for (int i = 1; i < blocks.size(); i++) {
            Block prev = blocks.get(i - 1);
            if (prev.end() == blocks.get(i).start() && !boundaries.contains(prev.end())) {
                return false;
            }
        }
        return true;
    }

    /** The blocks as {@code {start, size}} pairs, for comparison with the index. */
    List<Block> blocks() {
        return List.copyOf(blocks);
    }

    @Override
    public String toString() {
        return "LinearFirstFitModel" + blocks;
    }
}
