package lmcache4j.allocator.tensor.internal;

import java.util.Arrays;
import java.util.Objects;

/**
 * The free blocks of a {@code TensorMemoryAllocator}'s address space, indexed so that LMCache's
 * placement decisions cost O(log n) instead of a linear scan of its sorted free list.
 *
 * <p>LMCache keeps free blocks in a list sorted by start address, allocates <em>first fit by lowest
 * address</em> and coalesces a freed block with both neighbours. This index makes exactly the same
 * choices for every operation sequence: it is an AVL tree keyed by block start in which every node
 * also holds the largest block size in each of its two subtrees, so "the lowest-address block of at
 * least {@code n} bytes" is found by descending left-first into the subtrees whose maximum is large
 * enough.
 *
 * <p>Every operation descends from the root once and keeps the path it took: neighbours, the
 * double-free check and the block to carve all come from that one descent; blocks that only change
 * size (or, keeping their order, start) are updated in place; heights, balance and subtree maxima
 * are repaired bottom-up along the kept path. Nothing recurses on these paths.
 *
 * <p>The cost of an operation is a few dozen dependent loads and the branches the CPU mispredicts,
 * so the hot paths choose a child, a side or a neighbour by arithmetic on 0/1 ints ({@link #isBelow},
 * {@link #isZero}) where a data-dependent {@code if} would be a coin flip for the branch predictor.
 *
 * <p>Nodes are addressed by {@code int} id (id 0 is a sentinel standing for "no node") and packed
 * into one {@code long[]}, five longs each, so a descent reads one node's fields together. Released
 * ids are recycled through a free list and the storage doubles when full, so steady-state operation
 * allocates nothing.
 *
 * <p><b>Boundaries</b> ({@link #addBoundary}) are addresses that free blocks never span and are never
 * merged across: a pool that grows by appending memory regions must never hand out a slice that
 * straddles two regions (LMCache's {@code _can_merge_with_prev/_succ} hooks).
 *
 * <p>The index knows nothing about alignment: callers pass sizes already rounded up. It is not
 * thread-safe; the owning allocator locks around it.
 */
public final class FreeBlockIndex {

    /** Receives free blocks in ascending address order from {@link #forEach}. */
    @FunctionalInterface
    public interface BlockVisitor {
        /**
         * Called once per free block.
         *
         * @param start the block's first byte offset
         * @param size  the block's length in bytes, always positive
         */
        void visit(long start, long size);
    }

    /** Node id meaning "no node"; its fields are all 0 (size, maxima and height too), so no null checks are needed. */
    private static final int NIL = 0;
    private static final int INITIAL_CAPACITY = 16;
    /** Node count the storage may reach: {@code STRIDE} longs per node must fit one Java array. */
    private static final int MAX_CAPACITY = 1 << 28;
    /**
     * An AVL tree of fewer than 2^28 nodes is at most ~40 levels high, so a path never exceeds this
     * and its turns fit the bits of a {@code long} ({@link #descendTo}).
     */
    private static final int MAX_HEIGHT = 64;
    private static final int TO_STRING_LIMIT = 20;
    /** Returned by {@link #coalescedAfter} when two blocks could have been merged. */
    private static final long NOT_COALESCED = Long.MIN_VALUE;

    // Node layout: STRIDE longs per id in `node`.
    private static final int STRIDE = 5;
    /** The block's first byte offset: the search key. */
    private static final int START = 0;
    /** The block's length in bytes. */
    private static final int SIZE = 1;
    /**
     * Largest {@code SIZE} in the left subtree, followed by the largest in the right subtree: the
     * maximum on {@code side} 0 or 1 is at {@code LEFT_MAX + side}. What makes first fit O(log n).
     * A node holds its children's maxima rather than its own so that a first-fit step reads one
     * node, not the node and then its child: the next level's address waits on one load, not two.
     */
    private static final int LEFT_MAX = 2;
    /** Left child id in the low 32 bits, right child id in the high 32; a recycled id's next recycled id. */
    private static final int CHILDREN = 4;
    private static final long LOW_HALF = 0xFFFF_FFFFL;

    private long[] node = new long[STRIDE * INITIAL_CAPACITY];
    /** AVL height per id, 0 for the sentinel; apart from {@code node} since only rebalancing reads it. */
    private byte[] height = new byte[INITIAL_CAPACITY];

    private int root = NIL;
    /** Lowest id never handed out; slot 0 is the sentinel. */
    private int nextUnused = 1;
    /** Head of the list of recycled ids, linked through their {@code CHILDREN} field. */
    private int recycled = NIL;

    private int blockCount;
    private long freeBytes;

    /**
     * The root-to-node path of the last descent ({@code path[0]} is the root), kept so an update
     * repairs heights and maxima bottom-up along it instead of re-walking from the root. Reused so
     * updates allocate nothing.
     */
    private final int[] path = new int[MAX_HEIGHT];
    /** Nodes on {@link #path}. */
    private int pathDepth;
    /**
     * Where on {@link #path} {@link #descendTo} met the key's predecessor (largest start below the
     * key) and successor (smallest start at or above it), or -1 where there is none. Both lie on the
     * search path of a key, and the deeper of them is the path's last node.
     */
    private int predDepth;
    private int succDepth;

    /** Sorted, duplicate-free boundary addresses; few (one per appended region), so a sorted array suffices. */
    private long[] boundaries = new long[4];
    private int boundaryCount;

    /** Creates an index with no free blocks and no boundaries. */
    public FreeBlockIndex() {
    }

    // ---------------------------------------------------------------------------------------------
    // Public operations
    // ---------------------------------------------------------------------------------------------

    /**
     * Records an address that free blocks are never merged across. A free block that currently
     * spans {@code address} is split there, so no free block ever straddles a boundary. Adding a
     * boundary twice has no further effect.
     *
     * @param address a byte offset, at least 0
     * @throws IllegalArgumentException if {@code address} is negative
     */
    public void addBoundary(long address) {
        if (address < 0) {
            throw new IllegalArgumentException("boundary address must be >= 0, was " + address);
        }
        int i = Arrays.binarySearch(boundaries, 0, boundaryCount, address);
        if (i >= 0) {
            return;
        }
        int at = -(i + 1);
        if (boundaryCount == boundaries.length) {
            boundaries = Arrays.copyOf(boundaries, boundaries.length * 2);
        }
        System.arraycopy(boundaries, at, boundaries, at + 1, boundaryCount - at);
        boundaries[at] = address;
        boundaryCount++;

        // Keep the invariant "no free block spans a boundary" so allocation never straddles regions.
        descendTo(address);
        int t = predecessor();
        if (t != NIL && end(t) > address) {
            long blockEnd = end(t);
            setSize(t, address - start(t));
            repairMaxima(predDepth);
            // Sizes do not shape the tree: the descent's path still ends where `address` belongs.
            insertAtPathEnd(address, blockEnd - address);
        }
    }

    /**
     * Returns {@code [start, start + size)} to the free blocks, coalescing it with the free block
     * that ends at {@code start} and with the one that begins at {@code start + size}, except across
     * a boundary. A block that spans boundaries is split at each of them first and every piece is
     * coalesced on its own.
     *
     * @param start first byte offset of the block, at least 0
     * @param size  length in bytes, positive
     * @throws IllegalArgumentException if {@code start} is negative, {@code size} is not positive or
     *                                  the end overflows a {@code long}
     * @throws IllegalStateException    if the block overlaps a free block (a double free); the index is
     *                                  then left unchanged
     */
    public void free(long start, long size) {
        checkRange(start, size);
        long end = start + size;
        // One descent finds both neighbours of `start`; blocks are disjoint and sorted, so only they can overlap.
        descendTo(start);
        int pred = predecessor();
        int succ = successor();
        if ((pred != NIL && end(pred) > start) || (succ != NIL && start(succ) < end)) {
            throw doubleFree(start, end);
        }
        int b = firstBoundaryAbove(start);
        if (b == boundaryCount || boundaries[b] >= end) {
            coalesce(start, end); // the common case: no boundary inside, so the descent above serves
            return;
        }
        long pieceStart = start;
        while (b < boundaryCount && boundaries[b] < end) {
            insertCoalescing(pieceStart, boundaries[b]);
            pieceStart = boundaries[b++];
        }
        insertCoalescing(pieceStart, end);
    }

    /**
     * Allocates the first {@code size} bytes of the lowest-address free block holding at least
     * {@code size} bytes; the rest of that block stays free.
     *
     * @param size bytes wanted, positive (already aligned by the caller)
     * @return the start of the allocation, or -1 if no free block is large enough
     * @throws IllegalArgumentException if {@code size} is not positive
     */
    public long allocateFirstFit(long size) {
        if (size <= 0) {
            throw new IllegalArgumentException("allocation size must be > 0, was " + size);
        }
        if (subtreeMax(root) < size) {
            return -1;
        }
        long at = start(descendFirstFit(root, 0, size));
        takeFromPathEnd(size);
        return at;
    }

    /**
     * Allocates {@code count} slots of {@code unit} bytes the way LMCache's 2026 AddressManager
     * batches: free blocks are walked in address order and each gives as many whole slots from its
     * start as fit (no more than still needed); the tail of every touched block stays free. The
     * slots need not be contiguous.
     *
     * @param unit  bytes per slot, positive (already aligned by the caller)
     * @param count slots wanted, at least 1
     * @param out   receives the slot addresses, ascending, in {@code out[0..count)}
     * @return true if all {@code count} slots were allocated; false, with nothing modified (not even
     *         {@code out}), if the free blocks cannot supply that many
     * @throws IllegalArgumentException if {@code unit} or {@code count} is not positive or {@code out}
     *                                  is shorter than {@code count}
     */
    public boolean allocateBatch(long unit, int count, long[] out) {
        if (unit <= 0) {
            throw new IllegalArgumentException("batch unit must be > 0 bytes, was " + unit);
        }
        if (count < 1) {
            throw new IllegalArgumentException("batch count must be >= 1, was " + count);
        }
        Objects.requireNonNull(out, "out");
        if (out.length < count) {
            throw new IllegalArgumentException("out has room for " + out.length + " addresses, " + count + " needed");
        }
        // count * unit > freeBytes means failure; the division form cannot overflow.
        if (unit > freeBytes / count) {
            return false;
        }
        // First pass only counts, so a shortfall is reported with nothing modified.
        long needed = count;
        long from = 0;
        while (needed > 0) {
            int t = firstFitFrom(from, unit);
            if (t == NIL) {
                return false;
            }
            needed -= size(t) / unit;
            from = end(t);
        }
        // Second pass carves the same blocks; each search skips blocks smaller than `unit` wholesale.
        int filled = 0;
        from = 0;
        while (filled < count) {
            int t = firstFitFrom(from, unit);
            if (t == NIL) {
                // The first pass found enough slots; failing here would be a bug, not a full pool.
                throw new IllegalStateException("batch pass 2 ran out of blocks after " + filled + " of " + count + " slots");
            }
            long blockStart = start(t);
            from = end(t);
            int slots = (int) Math.min(size(t) / unit, count - filled);
            for (int i = 0; i < slots; i++) {
                out[filled++] = blockStart + i * unit;
            }
            takeFromPathEnd(slots * unit);
        }
        return true;
    }

    /** {@return the total size of all free blocks, in bytes} */
    public long freeBytes() {
        return freeBytes;
    }

    /** {@return the number of free blocks} */
    public int blockCount() {
        return blockCount;
    }

    /** {@return the size of the largest free block, or 0 when there is none} O(1): the root's subtree maximum. */
    public long largestBlock() {
        return subtreeMax(root);
    }

    /**
     * Visits every free block in ascending address order. The visitor must not modify this index.
     *
     * @param visitor receives each block
     */
    public void forEach(BlockVisitor visitor) {
        Objects.requireNonNull(visitor, "visitor");
        visit(root, visitor);
    }

    /**
     * {@return true if no two free blocks touch ({@code a.end == b.start}) without a boundary between
     * them} LMCache's {@code memcheck} demands this; the index keeps it by construction.
     */
    public boolean isFullyCoalesced() {
        return coalescedAfter(root, -1) != NOT_COALESCED;
    }

    /** Lists the counters and the free blocks as {@code [start, end)}, the first 20 only. */
    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder("FreeBlockIndex{blocks=").append(blockCount)
                .append(", freeBytes=").append(freeBytes)
                .append(", largest=").append(largestBlock())
                .append(", boundaries=").append(boundaryCount)
                .append(", [");
        int listed = appendBlocks(root, sb, 0);
        if (blockCount > listed) {
            sb.append(" ... ").append(blockCount - listed).append(" more");
        }
        return sb.append("]}").toString();
    }

    // ---------------------------------------------------------------------------------------------
    // Test support
    // ---------------------------------------------------------------------------------------------

    /**
     * Verifies every structural invariant, throwing {@link IllegalStateException} on the first
     * violation: BST order, disjoint blocks, AVL balance and heights, subtree maxima, the counters,
     * full coalescing, no block spanning a boundary, sorted boundaries and node-id accounting.
     */
    public void checkInvariants() {
        for (int f = 0; f < STRIDE; f++) {
            if (node[f] != 0) {
                throw new IllegalStateException("sentinel node was written to (field " + f + ")");
            }
        }
        if (height[NIL] != 0) {
            throw new IllegalStateException("sentinel height was written to");
        }
        for (int i = 1; i < boundaryCount; i++) {
            if (boundaries[i - 1] >= boundaries[i]) {
                throw new IllegalStateException("boundaries not strictly ascending at index " + i);
            }
        }
        long[] walk = {-1, 0, 0}; // previous end, bytes seen, blocks seen
        checkSubtree(root, Long.MIN_VALUE, Long.MAX_VALUE, walk);
        if (walk[1] != freeBytes) {
            throw new IllegalStateException("freeBytes counter " + freeBytes + " but blocks sum to " + walk[1]);
        }
        if (walk[2] != blockCount) {
            throw new IllegalStateException("blockCount counter " + blockCount + " but tree holds " + walk[2]);
        }
        int recycledCount = 0;
        for (int id = recycled; id != NIL; id = (int) node[STRIDE * id + CHILDREN]) {
            if (id < 0 || id >= nextUnused) {
                throw new IllegalStateException("recycled-id list holds " + id + ", never handed out");
            }
            if (++recycledCount > nextUnused) {
                throw new IllegalStateException("cycle in the recycled-id list");
            }
        }
        if (blockCount + recycledCount != nextUnused - 1) {
            throw new IllegalStateException(blockCount + " live + " + recycledCount + " recycled ids != "
                    + (nextUnused - 1) + " ids handed out");
        }
    }

    /** @return how many nodes the storage can hold; lets tests see that ids are recycled */
    public int nodeCapacity() {
        return height.length - 1;
    }

    // ---------------------------------------------------------------------------------------------
    // Coalescing and carving
    // ---------------------------------------------------------------------------------------------

    /** Inserts one boundary-free piece [s, e), merging with touching neighbours unless a boundary sits between. */
    private void insertCoalescing(long s, long e) {
        descendTo(s);
        coalesce(s, e);
    }

    /** {@link #insertCoalescing} after {@link #descendTo}{@code (s)}: uses the neighbours and path it found. */
    private void coalesce(long s, long e) {
        int pred = predecessor();
        int succ = successor();
        long n = e - s;
        // Which neighbours touch, as bits (1: prev, 2: succ), computed without branches: which case
        // comes next is a coin flip for the CPU. NIL's fields are 0, so the NIL tests are needed only at 0.
        int merge = isZero(end(pred) ^ s) * (pred != NIL ? 1 : 0) | isZero(start(succ) ^ e) * (succ != NIL ? 2 : 0);
        if (boundaryCount > 0) {
            merge &= (isBoundary(s) ? 0 : 1) | (isBoundary(e) ? 0 : 2);
        }
        if (merge == 0) {
            insertAtPathEnd(s, n);
        } else if (merge == 3) {
            // LMCache keeps prev and drops succ; which node holds the merged block is invisible, so the
            // shallower neighbour takes it and the deeper one, the path's last node, is unlinked.
            long mergedStart = start(pred);
            long mergedSize = size(pred) + n + size(succ);
            int keep = path[Math.min(predDepth, succDepth)];
            setStart(keep, mergedStart);
            setSize(keep, mergedSize);
            unlinkPathEnd();
        } else {
            // One neighbour grows: prev at its end, or succ at its start (re-keying succ to s keeps
            // BST order, its predecessor ends at or before s). Picked arithmetically, not by a branch.
            int intoSucc = merge >>> 1;
            int depth = predDepth + ((succDepth - predDepth) & -intoSucc);
            int t = path[depth];
            setStart(t, start(t) - intoSucc * n);
            setSize(t, size(t) + n);
            repairMaxima(depth);
        }
        freeBytes += n;
    }

    /**
     * Allocates the first {@code amount} bytes of the path's last node: removes it on an exact fit,
     * else shrinks it from the front in place (its start grows but stays below its successor's, so
     * BST order holds and only the maxima above it need repair).
     */
    private void takeFromPathEnd(long amount) {
        int d = pathDepth - 1;
        int t = path[d];
        if (size(t) == amount) {
            removePathEnd();
        } else {
            setStart(t, start(t) + amount);
            setSize(t, size(t) - amount);
            repairMaxima(d);
        }
        freeBytes -= amount;
    }

    private IllegalStateException doubleFree(long start, long end) {
        // Reports the block LMCache's linear scan names: the last one starting before `end`.
        int p = floorBelow(end);
        return new IllegalStateException("double free: [" + start + ", " + end + ") overlaps free block ["
                + start(p) + ", " + end(p) + ")");
    }

    private void checkRange(long start, long size) {
        if (size <= 0) {
            throw new IllegalArgumentException("block size must be > 0, was " + size);
        }
        if (start < 0) {
            throw new IllegalArgumentException("block start must be >= 0, was " + start);
        }
        if (start > Long.MAX_VALUE - size) {
            throw new IllegalArgumentException("block [" + start + ", " + start + " + " + size + ") ends past Long.MAX_VALUE");
        }
    }

    private boolean isBoundary(long address) {
        return boundaryCount > 0 && Arrays.binarySearch(boundaries, 0, boundaryCount, address) >= 0;
    }

    /** @return the index of the first boundary strictly greater than {@code address} */
    private int firstBoundaryAbove(long address) {
        if (boundaryCount == 0) {
            return 0;
        }
        int i = Arrays.binarySearch(boundaries, 0, boundaryCount, address);
        return i >= 0 ? i + 1 : -(i + 1);
    }

    // ---------------------------------------------------------------------------------------------
    // Descents
    // ---------------------------------------------------------------------------------------------

    /**
     * Records in {@link #path} the search path of {@code key} down to where it would be inserted,
     * and where on it the key's predecessor and successor are ({@link #predDepth}, {@link #succDepth}).
     */
    private void descendTo(long key) {
        int depth = 0;
        long rightTurns = 0; // bit d set: the walk went right at path[d]
        for (int t = root; t != NIL; depth++) {
            path[depth] = t;
            int goRight = isBelow(start(t), key);
            rightTurns |= (long) goRight << depth;
            t = child(t, goRight);
        }
        pathDepth = depth;
        // The predecessor is the deepest node the walk went right at, the successor the deepest it went left at.
        predDepth = 63 - Long.numberOfLeadingZeros(rightTurns);
        succDepth = 63 - Long.numberOfLeadingZeros(~rightTurns & ((1L << depth) - 1));
    }

    /** @return the predecessor the last {@link #descendTo} found, or NIL */
    private int predecessor() {
        return predDepth < 0 ? NIL : path[predDepth];
    }

    /** @return the successor the last {@link #descendTo} found, or NIL */
    private int successor() {
        return succDepth < 0 ? NIL : path[succDepth];
    }

    /**
     * @return the lowest-address node in subtree {@code t}, whose maximum must be at least {@code n},
     *         holding at least {@code n} bytes; the path to it continues {@link #path} from {@code depth}
     */
    private int descendFirstFit(int t, int depth, long n) {
        while (true) {
            path[depth++] = t;
            // Right unless the left subtree can serve; stop if it cannot but t itself can. `&` on
            // 0/1 ints, not `&&`, so the CPU has one well-predicted branch here, not two coin flips.
            int goRight = isBelow(childMax(t, 0), n);
            int fits = isBelow(size(t), n) ^ 1;
            if ((goRight & fits) != 0) {
                pathDepth = depth;
                return t;
            }
            t = child(t, goRight);
        }
    }

    /**
     * @return the lowest-address node that starts at or after {@code from} and holds at least
     *         {@code n} bytes, with the path to it in {@link #path}; or NIL. O(log n).
     */
    private int firstFitFrom(long from, long n) {
        // Walk down towards `from`; a subtree whose maximum is too small holds no candidate.
        int depth = 0;
        for (int t = root; t != NIL && subtreeMax(t) >= n; t = child(t, isBelow(start(t), from))) {
            path[depth++] = t;
        }
        // The blocks at or after `from`, in address order, are each path node where the walk went
        // left, deepest first, each followed by its right subtree.
        for (int d = depth - 1; d >= 0; d--) {
            int t = path[d];
            if (start(t) < from) {
                continue;
            }
            if (size(t) >= n) {
                pathDepth = d + 1;
                return t;
            }
            if (childMax(t, 1) >= n) {
                return descendFirstFit(right(t), d + 1, n);
            }
        }
        pathDepth = 0;
        return NIL;
    }

    /** @return the node with the largest start strictly below {@code key}, or NIL; for error messages */
    private int floorBelow(long key) {
        int best = NIL;
        for (int t = root; t != NIL; ) {
            if (start(t) < key) {
                best = t;
                t = right(t);
            } else {
                t = left(t);
            }
        }
        return best;
    }

    /** @return 1 if {@code x == 0}, else 0, without a branch */
    private static int isZero(int x) {
        return ((x | -x) >>> 31) ^ 1;
    }

    /** @return 1 if {@code x == 0}, else 0, without a branch */
    private static int isZero(long x) {
        return (int) (((x | -x) >>> 63) ^ 1);
    }

    /** @return 1 if {@code a < b}, else 0, without a branch; both must be non-negative */
    private static int isBelow(long a, long b) {
        return (int) ((a - b) >>> 63);
    }

    // ---------------------------------------------------------------------------------------------
    // Whole-tree walks (not on the hot path)
    // ---------------------------------------------------------------------------------------------

    private void visit(int t, BlockVisitor visitor) {
        if (t == NIL) {
            return;
        }
        visit(left(t), visitor);
        visitor.visit(start(t), size(t));
        visit(right(t), visitor);
    }

    /** In-order walk returning the last end seen, or {@link #NOT_COALESCED} once two blocks could merge. */
    private long coalescedAfter(int t, long prevEnd) {
        if (t == NIL) {
            return prevEnd;
        }
        long before = coalescedAfter(left(t), prevEnd);
        if (before == NOT_COALESCED || (before == start(t) && !isBoundary(start(t)))) {
            return NOT_COALESCED;
        }
        return coalescedAfter(right(t), end(t));
    }

    private int appendBlocks(int t, StringBuilder sb, int listed) {
        if (t == NIL || listed >= TO_STRING_LIMIT) {
            return listed;
        }
        listed = appendBlocks(left(t), sb, listed);
        if (listed < TO_STRING_LIMIT) {
            sb.append(listed == 0 ? "" : ", ").append('[').append(start(t)).append(", ").append(end(t)).append(')');
            listed++;
        }
        return appendBlocks(right(t), sb, listed);
    }

    /** @return the subtree height; checks ids, order, bounds, balance, maxima and the in-order properties */
    private int checkSubtree(int t, long lo, long hi, long[] walk) {
        if (t == NIL) {
            return 0;
        }
        if (t < 0 || t >= nextUnused) {
            throw new IllegalStateException("tree links id " + t + ", never handed out");
        }
        if (walk[2] >= nextUnused) {
            throw new IllegalStateException("tree has more nodes than ids handed out: a cycle");
        }
        if (start(t) < lo || start(t) > hi) {
            throw new IllegalStateException("BST order broken at block [" + start(t) + ", " + end(t) + ")");
        }
        int lh = checkSubtree(left(t), lo, start(t) - 1, walk);
        if (size(t) <= 0) {
            throw new IllegalStateException("block at " + start(t) + " has size " + size(t));
        }
        if (walk[0] > start(t)) {
            throw new IllegalStateException("free blocks overlap: one ends at " + walk[0] + ", next starts at " + start(t));
        }
        if (walk[0] == start(t) && !isBoundary(start(t))) {
            throw new IllegalStateException("not coalesced: free blocks touch at " + start(t) + " with no boundary there");
        }
        int b = firstBoundaryAbove(start(t));
        if (b < boundaryCount && boundaries[b] < end(t)) {
            throw new IllegalStateException("block [" + start(t) + ", " + end(t) + ") spans boundary " + boundaries[b]);
        }
        walk[0] = end(t);
        walk[1] += size(t);
        walk[2]++;
        int rh = checkSubtree(right(t), start(t) + 1, hi, walk);
        if (Math.abs(lh - rh) > 1) {
            throw new IllegalStateException("AVL balance broken at " + start(t) + ": heights " + lh + " and " + rh);
        }
        if (height[t] != 1 + Math.max(lh, rh)) {
            throw new IllegalStateException("stale height at " + start(t));
        }
        // The children's own maxima were checked below, so subtreeMax of a child is its true maximum.
        for (int side = 0; side <= 1; side++) {
            long expectedMax = subtreeMax(child(t, side));
            if (childMax(t, side) != expectedMax) {
                throw new IllegalStateException("stale " + (side == 0 ? "left" : "right") + " maximum at " + start(t)
                        + ": " + childMax(t, side) + ", expected " + expectedMax);
            }
        }
        return height[t];
    }

    // ---------------------------------------------------------------------------------------------
    // AVL maintenance along the kept path
    // ---------------------------------------------------------------------------------------------

    /**
     * Brings the maxima the ancestors of {@code path[depth]} hold up to date after that subtree's
     * maximum may have changed. It walks all the way up rather than stopping where a maximum comes
     * out unchanged: that test is a branch the CPU mispredicts, dearer than the loads it would save.
     */
    private void repairMaxima(int depth) {
        int below = path[depth];
        long max = subtreeMax(below);
        for (int d = depth - 1; d >= 0; d--) {
            int t = path[d];
            int side = isZero(right(t) ^ below); // which child `below` is, without a branch
            setChildMax(t, side, max);
            // The path side's new maximum is in hand; only the other side's is read.
            max = Math.max(size(t), Math.max(max, childMax(t, side ^ 1)));
            below = t;
        }
    }

    /** Adds a node for [s, s + sz) as a child of the path's last node, where {@link #descendTo}{@code (s)} ended. */
    private void insertAtPathEnd(long s, long sz) {
        int t = newNode();
        setStart(t, s);
        setSize(t, sz);
        setChildMax(t, 0, 0);
        setChildMax(t, 1, 0);
        node[STRIDE * t + CHILDREN] = 0; // both NIL
        height[t] = 1;
        blockCount++;
        int d = pathDepth - 1;
        if (d < 0) {
            root = t;
            return;
        }
        int parent = path[d];
        setChild(parent, isBelow(start(parent), s), t);
        rebalanceUp(d);
    }

    /**
     * Removes the path's last node. One with two children takes over its in-order successor's block
     * instead, and the successor, which has no left child, is unlinked; the maxima repair on the way
     * up passes the node that changed block, so its ancestors see its new size.
     */
    private void removePathEnd() {
        int t = path[pathDepth - 1];
        if (left(t) != NIL && right(t) != NIL) {
            int successor = right(t);
            path[pathDepth++] = successor;
            while (left(successor) != NIL) {
                successor = left(successor);
                path[pathDepth++] = successor;
            }
            setStart(t, start(successor));
            setSize(t, size(successor));
        }
        unlinkPathEnd();
    }

    /** Unlinks the path's last node, which has at most one child, and rebalances upward. */
    private void unlinkPathEnd() {
        int d = pathDepth - 1;
        int t = path[d];
        replaceChild(d - 1, t, left(t) | right(t)); // the one child, or NIL (0) if none
        release(t);
        blockCount--;
        rebalanceUp(d - 1);
    }

    /**
     * Restores heights, balance and maxima from {@code path[depth]} up to the root, rotating where
     * needed. Once a subtree comes out as high as it was, nothing above needs rebalancing and only
     * the maxima are left to repair, by the cheaper {@link #repairMaxima}.
     */
    private void rebalanceUp(int depth) {
        for (int d = depth; d >= 0; d--) {
            int t = path[d];
            int oldHeight = height[t];
            int top = rebalance(t);
            if (top != t) {
                replaceChild(d - 1, t, top);
                path[d] = top;
            }
            if (height[top] == oldHeight) {
                repairMaxima(d);
                return;
            }
        }
    }

    /** Points the parent of {@code old}, {@code path[parentDepth]} (the root when negative), at {@code child}. */
    private void replaceChild(int parentDepth, int old, int child) {
        if (parentDepth < 0) {
            root = child;
            return;
        }
        int parent = path[parentDepth];
        setChild(parent, isZero(right(parent) ^ old), child);
    }

    /** Updates {@code t}'s height and maxima from its children and rotates if it is out of balance; returns the subtree's new root. */
    private int rebalance(int t) {
        update(t);
        int balance = height[left(t)] - height[right(t)];
        if (balance > 1) {
            int l = left(t);
            if (height[left(l)] < height[right(l)]) {
                setLeft(t, rotateLeft(l));
            }
            return rotateRight(t);
        }
        if (balance < -1) {
            int r = right(t);
            if (height[right(r)] < height[left(r)]) {
                setRight(t, rotateRight(r));
            }
            return rotateLeft(t);
        }
        return t;
    }

    private int rotateRight(int t) {
        int l = left(t);
        setLeft(t, right(l));
        setRight(l, t);
        update(t);
        update(l);
        return l;
    }

    private int rotateLeft(int t) {
        int r = right(t);
        setRight(t, left(r));
        setLeft(r, t);
        update(t);
        update(r);
        return r;
    }

    /** Recomputes {@code t}'s height and the maxima it holds from its children, which must be current. */
    private void update(int t) {
        int l = left(t);
        int r = right(t);
        height[t] = (byte) (1 + Math.max(height[l], height[r]));
        setChildMax(t, 0, subtreeMax(l));
        setChildMax(t, 1, subtreeMax(r));
    }

    // ---------------------------------------------------------------------------------------------
    // Node storage
    // ---------------------------------------------------------------------------------------------

    private long start(int t) {
        return node[STRIDE * t + START];
    }

    private long size(int t) {
        return node[STRIDE * t + SIZE];
    }

    private long end(int t) {
        return start(t) + size(t);
    }

    /** @return the largest block size in the subtree rooted at {@code t}; 0 for NIL */
    private long subtreeMax(int t) {
        return Math.max(size(t), Math.max(childMax(t, 0), childMax(t, 1)));
    }

    /** @return the largest block size in {@code t}'s left subtree for {@code side} 0, its right for 1 */
    private long childMax(int t, int side) {
        return node[STRIDE * t + LEFT_MAX + side];
    }

    private int left(int t) {
        return (int) node[STRIDE * t + CHILDREN];
    }

    private int right(int t) {
        return (int) (node[STRIDE * t + CHILDREN] >>> 32);
    }

    /** @return the left child for {@code side} 0, the right child for 1: a shift, not a branch */
    private int child(int t, int side) {
        return (int) (node[STRIDE * t + CHILDREN] >>> (side << 5));
    }

    private void setStart(int t, long start) {
        node[STRIDE * t + START] = start;
    }

    private void setSize(int t, long size) {
        node[STRIDE * t + SIZE] = size;
    }

    private void setChildMax(int t, int side, long max) {
        node[STRIDE * t + LEFT_MAX + side] = max;
    }

    private void setLeft(int t, int c) {
        setChild(t, 0, c);
    }

    private void setRight(int t, int c) {
        setChild(t, 1, c);
    }

    /** Sets the left child for {@code side} 0, the right child for 1: shifts, not a branch. */
    private void setChild(int t, int side, int c) {
        int i = STRIDE * t + CHILDREN;
        int shift = side << 5;
        node[i] = (node[i] & ~(LOW_HALF << shift)) | ((c & LOW_HALF) << shift);
    }

    private int newNode() {
        if (recycled != NIL) {
            int id = recycled;
            recycled = (int) node[STRIDE * id + CHILDREN];
            return id;
        }
        if (nextUnused == height.length) {
            grow();
        }
        return nextUnused++;
    }

    private void release(int id) {
        node[STRIDE * id + CHILDREN] = recycled;
        recycled = id;
    }

    private void grow() {
        if (height.length >= MAX_CAPACITY) {
            throw new IllegalStateException("free-block index cannot hold more than " + (height.length - 1) + " blocks");
        }
        int capacity = height.length * 2;
        node = Arrays.copyOf(node, STRIDE * capacity);
        height = Arrays.copyOf(height, capacity);
    }
}
