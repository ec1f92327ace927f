package lmcache4j.allocator.tensor;

import java.util.Arrays;
import java.util.Objects;

/**
 * The free blocks of a {@code TensorMemoryAllocator}'s address space, indexed so that LMCache's
 * placement decisions cost O(log n) instead of a linear scan of its sorted free list.
 *
 * <p>LMCache keeps free blocks in a list sorted by start address, allocates <em>first fit by lowest
 * address</em> and coalesces a freed block with both neighbours. This index makes exactly the same
 * choices for every operation sequence: it is an AVL tree keyed by block start in which every node
 * also holds the largest block size in its subtree, so "the lowest-address block of at least
 * {@code n} bytes" is found by descending left-first into the subtrees whose maximum is large
 * enough.
 *
 * <p>Nodes live in parallel primitive arrays and are addressed by {@code int} id (id 0 is a sentinel
 * standing for "no node"), released ids are recycled through a free list and the arrays double when
 * full, so steady-state operation allocates nothing.
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

    /** Node id meaning "no node"; its slot holds height 0 and maxSize 0 so no null checks are needed. */
    private static final int NIL = 0;
    private static final int INITIAL_CAPACITY = 16;
    /** An AVL tree of fewer than 2^31 nodes is at most ~45 levels high, so a path never exceeds this. */
    private static final int MAX_HEIGHT = 64;
    private static final int TO_STRING_LIMIT = 20;
    /** Returned by {@link #coalescedAfter} when two blocks could have been merged. */
    private static final long NOT_COALESCED = Long.MIN_VALUE;

    private long[] start = new long[INITIAL_CAPACITY];
    private long[] size = new long[INITIAL_CAPACITY];
    /** Largest {@code size} in the subtree rooted at each node: what makes first fit O(log n). */
    private long[] maxSize = new long[INITIAL_CAPACITY];
    private int[] left = new int[INITIAL_CAPACITY];
    /** Right child; for a recycled id, the next recycled id. */
    private int[] right = new int[INITIAL_CAPACITY];
    private byte[] height = new byte[INITIAL_CAPACITY];

    private int root = NIL;
    /** Lowest id never handed out; slot 0 is the sentinel. */
    private int nextUnused = 1;
    /** Head of the list of recycled ids, linked through {@code right}. */
    private int recycled = NIL;

    private int blockCount;
    private long freeBytes;

    /** Scratch for the root-to-node path of {@link #setBlock}, reused so updates allocate nothing. */
    private final int[] path = new int[MAX_HEIGHT];

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
        int t = floorBelow(address);
        if (t != NIL && end(t) > address) {
            long blockStart = start[t];
            long blockEnd = end(t);
            setBlock(blockStart, blockStart, address - blockStart);
            insert(address, blockEnd - address);
            blockCount++;
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
        // Only the last block starting before `end` can overlap: blocks are disjoint and sorted.
        int p = floorBelow(end);
        if (p != NIL && end(p) > start) {
            throw new IllegalStateException("double free: [" + start + ", " + end + ") overlaps free block ["
                    + this.start[p] + ", " + end(p) + ")");
        }
        int b = firstBoundaryAbove(start);
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
        int t = firstFit(root, 0, size);
        if (t == NIL) {
            return -1;
        }
        long at = start[t];
        take(t, size);
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
            int t = firstFit(root, from, unit);
            if (t == NIL) {
                return false;
            }
            needed -= size[t] / unit;
            from = end(t);
        }
        // Second pass carves the same blocks; each search skips blocks smaller than `unit` wholesale.
        int filled = 0;
        from = 0;
        while (filled < count) {
            int t = firstFit(root, from, unit);
            if (t == NIL) {
                // The first pass found enough slots; failing here would be a bug, not a full pool.
                throw new IllegalStateException("batch pass 2 ran out of blocks after " + filled + " of " + count + " slots");
            }
            long blockStart = start[t];
            from = end(t);
            int slots = (int) Math.min(size[t] / unit, count - filled);
            for (int i = 0; i < slots; i++) {
                out[filled++] = blockStart + i * unit;
            }
            take(t, slots * unit);
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
        return maxSize[root];
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
    void checkInvariants() {
        if (height[NIL] != 0 || maxSize[NIL] != 0 || size[NIL] != 0 || left[NIL] != NIL || right[NIL] != NIL) {
            throw new IllegalStateException("sentinel node was written to");
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
        for (int id = recycled; id != NIL; id = right[id]) {
            if (++recycledCount > nextUnused) {
                throw new IllegalStateException("cycle in the recycled-id list");
            }
        }
        if (blockCount + recycledCount != nextUnused - 1) {
            throw new IllegalStateException(blockCount + " live + " + recycledCount + " recycled ids != "
                    + (nextUnused - 1) + " ids handed out");
        }
    }

    /** @return how many nodes the arrays can hold; lets tests see that ids are recycled */
    int nodeCapacity() {
        return start.length - 1;
    }

    // ---------------------------------------------------------------------------------------------
    // Coalescing and carving
    // ---------------------------------------------------------------------------------------------

    /** Inserts one boundary-free piece [s, e), merging with touching neighbours unless a boundary sits between. */
    private void insertCoalescing(long s, long e) {
        int p = floorBelow(s);
        boolean withPrev = p != NIL && end(p) == s && !isBoundary(s);
        int q = isBoundary(e) ? NIL : find(e);
        if (withPrev && q != NIL) {
            // LMCache: prev absorbs both, succ removed.
            long total = size[p] + (e - s) + size[q];
            root = remove(root, e);
            blockCount--;
            setBlock(start[p], start[p], total);
        } else if (withPrev) {
            setBlock(start[p], start[p], size[p] + (e - s));
        } else if (q != NIL) {
            // Re-keying succ to s keeps BST order: its predecessor ends at or before s.
            setBlock(e, s, size[q] + (e - s));
        } else {
            insert(s, e - s);
            blockCount++;
        }
        freeBytes += e - s;
    }

    /** Allocates the first {@code amount} bytes of node {@code t}: removes it on an exact fit, else shrinks it from the front. */
    private void take(int t, long amount) {
        long s = start[t];
        if (size[t] == amount) {
            root = remove(root, s);
            blockCount--;
        } else {
            setBlock(s, s + amount, size[t] - amount);
        }
        freeBytes -= amount;
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
        int i = Arrays.binarySearch(boundaries, 0, boundaryCount, address);
        return i >= 0 ? i + 1 : -(i + 1);
    }

    // ---------------------------------------------------------------------------------------------
    // Queries on the tree
    // ---------------------------------------------------------------------------------------------

    private long end(int t) {
        return start[t] + size[t];
    }

    /** @return the node with the largest start strictly below {@code key}, or NIL */
    private int floorBelow(long key) {
        int best = NIL;
        for (int t = root; t != NIL; ) {
            if (start[t] < key) {
                best = t;
                t = right[t];
            } else {
                t = left[t];
            }
        }
        return best;
    }

    /** @return the node starting exactly at {@code key}, or NIL */
    private int find(long key) {
        for (int t = root; t != NIL; ) {
            if (key < start[t]) {
                t = left[t];
            } else if (key > start[t]) {
                t = right[t];
            } else {
                return t;
            }
        }
        return NIL;
    }

    /**
     * @return the lowest-address node in subtree {@code t} that starts at or after {@code from} and
     *         holds at least {@code n} bytes, or NIL. O(log n): off the search path for {@code from},
     *         a subtree whose maximum is large enough always contains the answer, so at most one
     *         such subtree is descended into.
     */
    private int firstFit(int t, long from, long n) {
        while (t != NIL && maxSize[t] >= n) {
            if (start[t] < from) {
                t = right[t];
                continue;
            }
            int found = firstFit(left[t], from, n);
            if (found != NIL) {
                return found;
            }
            if (size[t] >= n) {
                return t;
            }
            t = right[t];
        }
        return NIL;
    }

    private void visit(int t, BlockVisitor visitor) {
        if (t == NIL) {
            return;
        }
        visit(left[t], visitor);
        visitor.visit(start[t], size[t]);
        visit(right[t], visitor);
    }

    /** In-order walk returning the last end seen, or {@link #NOT_COALESCED} once two blocks could merge. */
    private long coalescedAfter(int t, long prevEnd) {
        if (t == NIL) {
            return prevEnd;
        }
        long before = coalescedAfter(left[t], prevEnd);
        if (before == NOT_COALESCED || (before == start[t] && !isBoundary(start[t]))) {
            return NOT_COALESCED;
        }
        return coalescedAfter(right[t], end(t));
    }

    private int appendBlocks(int t, StringBuilder sb, int listed) {
        if (t == NIL || listed >= TO_STRING_LIMIT) {
            return listed;
        }
        listed = appendBlocks(left[t], sb, listed);
        if (listed < TO_STRING_LIMIT) {
            sb.append(listed == 0 ? "" : ", ").append('[').append(start[t]).append(", ").append(end(t)).append(')');
            listed++;
        }
        return appendBlocks(right[t], sb, listed);
    }

    /** @return the subtree height; checks order, bounds, balance, maxima and the in-order properties */
    private int checkSubtree(int t, long lo, long hi, long[] walk) {
        if (t == NIL) {
            return 0;
        }
        if (start[t] < lo || start[t] > hi) {
            throw new IllegalStateException("BST order broken at block [" + start[t] + ", " + end(t) + ")");
        }
        int lh = checkSubtree(left[t], lo, start[t] - 1, walk);
        if (size[t] <= 0) {
            throw new IllegalStateException("block at " + start[t] + " has size " + size[t]);
        }
        if (walk[0] > start[t]) {
            throw new IllegalStateException("free blocks overlap: one ends at " + walk[0] + ", next starts at " + start[t]);
        }
        if (walk[0] == start[t] && !isBoundary(start[t])) {
            throw new IllegalStateException("not coalesced: free blocks touch at " + start[t] + " with no boundary there");
        }
        int b = firstBoundaryAbove(start[t]);
        if (b < boundaryCount && boundaries[b] < end(t)) {
            throw new IllegalStateException("block [" + start[t] + ", " + end(t) + ") spans boundary " + boundaries[b]);
        }
        walk[0] = end(t);
        walk[1] += size[t];
        walk[2]++;
        int rh = checkSubtree(right[t], start[t] + 1, hi, walk);
        if (Math.abs(lh - rh) > 1) {
            throw new IllegalStateException("AVL balance broken at " + start[t] + ": heights " + lh + " and " + rh);
        }
        if (height[t] != 1 + Math.max(lh, rh)) {
            throw new IllegalStateException("stale height at " + start[t]);
        }
        long expectedMax = Math.max(size[t], Math.max(maxSize[left[t]], maxSize[right[t]]));
        if (maxSize[t] != expectedMax) {
            throw new IllegalStateException("stale maxSize at " + start[t] + ": " + maxSize[t] + ", expected " + expectedMax);
        }
        return height[t];
    }

    // ---------------------------------------------------------------------------------------------
    // AVL maintenance
    // ---------------------------------------------------------------------------------------------

    /** Changes the block keyed {@code key}; the caller guarantees the new start keeps BST order. */
    private void setBlock(long key, long newStart, long newSize) {
        int depth = 0;
        int t = root;
        while (t != NIL && start[t] != key) {
            path[depth++] = t;
            t = key < start[t] ? left[t] : right[t];
        }
        if (t == NIL) {
            // Never reached by the public operations; guards the sentinel against a logic error.
            throw new IllegalStateException("no free block starts at " + key);
        }
        start[t] = newStart;
        size[t] = newSize;
        // Heights are unchanged; only the maxima on the root path can be stale.
        refreshMax(t);
        while (depth > 0) {
            refreshMax(path[--depth]);
        }
    }

    private void insert(long s, long sz) {
        int node = newNode();
        start[node] = s;
        size[node] = sz;
        maxSize[node] = sz;
        left[node] = NIL;
        right[node] = NIL;
        height[node] = 1;
        root = insert(root, node);
    }

    private int insert(int t, int node) {
        if (t == NIL) {
            return node;
        }
        if (start[node] < start[t]) {
            left[t] = insert(left[t], node);
        } else {
            right[t] = insert(right[t], node);
        }
        return rebalance(t);
    }

    /** Removes the node keyed {@code key} from subtree {@code t} by relinking, so other node ids stay valid. */
    private int remove(int t, long key) {
        if (key < start[t]) {
            left[t] = remove(left[t], key);
        } else if (key > start[t]) {
            right[t] = remove(right[t], key);
        } else {
            int l = left[t];
            int r = right[t];
            release(t);
            if (l == NIL) {
                return r;
            }
            if (r == NIL) {
                return l;
            }
            int successor = r;
            while (left[successor] != NIL) {
                successor = left[successor];
            }
            right[successor] = removeMin(r);
            left[successor] = l;
            return rebalance(successor);
        }
        return rebalance(t);
    }

    private int removeMin(int t) {
        if (left[t] == NIL) {
            return right[t];
        }
        left[t] = removeMin(left[t]);
        return rebalance(t);
    }

    private int rebalance(int t) {
        update(t);
        int balance = height[left[t]] - height[right[t]];
        if (balance > 1) {
            int l = left[t];
            if (height[left[l]] < height[right[l]]) {
                left[t] = rotateLeft(l);
            }
            return rotateRight(t);
        }
        if (balance < -1) {
            int r = right[t];
            if (height[right[r]] < height[left[r]]) {
                right[t] = rotateRight(r);
            }
            return rotateLeft(t);
        }
        return t;
    }

    private int rotateRight(int t) {
        int l = left[t];
        left[t] = right[l];
        right[l] = t;
        update(t);
        update(l);
        return l;
    }

    private int rotateLeft(int t) {
        int r = right[t];
        right[t] = left[r];
        left[r] = t;
        update(t);
        update(r);
        return r;
    }

    private void update(int t) {
        height[t] = (byte) (1 + Math.max(height[left[t]], height[right[t]]));
        refreshMax(t);
    }

    private void refreshMax(int t) {
        maxSize[t] = Math.max(size[t], Math.max(maxSize[left[t]], maxSize[right[t]]));
    }

    // ---------------------------------------------------------------------------------------------
    // Node storage
    // ---------------------------------------------------------------------------------------------

    private int newNode() {
        if (recycled != NIL) {
            int id = recycled;
            recycled = right[id];
            return id;
        }
        if (nextUnused == start.length) {
            grow();
        }
        return nextUnused++;
    }

    private void release(int id) {
        right[id] = recycled;
        recycled = id;
    }

    private void grow() {
        if (start.length >= Integer.MAX_VALUE / 2) {
            throw new IllegalStateException("free-block index cannot hold more than " + (start.length - 1) + " blocks");
        }
        int capacity = start.length * 2;
        start = Arrays.copyOf(start, capacity);
        size = Arrays.copyOf(size, capacity);
        maxSize = Arrays.copyOf(maxSize, capacity);
        left = Arrays.copyOf(left, capacity);
        right = Arrays.copyOf(right, capacity);
        height = Arrays.copyOf(height, capacity);
    }
}
