package lmcache4j.allocator.tensor;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import org.junit.jupiter.api.Test;

import lmcache4j.allocator.tensor.LinearFirstFitModel.Block;
import lmcache4j.allocator.tensor.internal.FreeBlockIndex;

class FreeBlockIndexTest {
    private static final long K = 4096;

    /** An index whose free blocks are exactly the given {start, size} pairs (in units of K). */
    private static FreeBlockIndex indexOf(long... startSizePairs) {
        FreeBlockIndex index = new FreeBlockIndex();
        for (int i = 0; i < startSizePairs.length; i += 2) {
            index.free(startSizePairs[i] * K, startSizePairs[i + 1] * K);
        }
        index.checkInvariants();
        return index;
    }

    private static List<Block> blocks(FreeBlockIndex index) {
        List<Block> out = new ArrayList<>();
        index.forEach((s, n) -> out.add(new Block(s, n)));
        return out;
    }

    /** Blocks given as {start, size} pairs in units of K. */
    private static List<Block> expected(long... startSizePairs) {
        List<Block> out = new ArrayList<>();
        for (int i = 0; i < startSizePairs.length; i += 2) {
            out.add(new Block(startSizePairs[i] * K, startSizePairs[i + 1] * K));
        }
        return out;
    }

    @Test
    void anEmptyIndexHasNothingToGive() {
        FreeBlockIndex index = new FreeBlockIndex();
        assertEquals(0, index.freeBytes());
        assertEquals(0, index.blockCount());
        assertEquals(0, index.largestBlock());
        assertEquals(-1, index.allocateFirstFit(1));
        assertFalse(index.allocateBatch(1, 1, new long[1]));
        assertTrue(index.isFullyCoalesced());
        index.checkInvariants();
    }

    @Test
    void firstFitTakesTheLowestAddressBlockThatIsLargeEnoughNotTheBestFit() {
        FreeBlockIndex index = indexOf(0, 1, 8, 4, 16, 2, 32, 16);
        assertEquals(8 * K, index.allocateFirstFit(2 * K)); // [16,+2) would fit exactly but sits higher
        assertEquals(expected(0, 1, 10, 2, 16, 2, 32, 16), blocks(index));
        assertEquals(0, index.allocateFirstFit(K));
        assertEquals(32 * K, index.allocateFirstFit(3 * K));
        index.checkInvariants();
    }

    @Test
    void anExactFitRemovesTheBlock() {
        FreeBlockIndex index = indexOf(0, 1, 4, 3, 10, 5);
        assertEquals(4 * K, index.allocateFirstFit(3 * K));
        assertEquals(expected(0, 1, 10, 5), blocks(index));
        assertEquals(2, index.blockCount());
        assertEquals(6 * K, index.freeBytes());
        index.checkInvariants();
    }

    @Test
    void aLargerBlockKeepsItsTailFree() {
        FreeBlockIndex index = indexOf(0, 16);
        assertEquals(0, index.allocateFirstFit(5 * K));
        assertEquals(expected(5, 11), blocks(index));
        assertEquals(11 * K, index.largestBlock());
        index.checkInvariants();
    }

    @Test
    void noFitReturnsMinusOneAndChangesNothing() {
        FreeBlockIndex index = indexOf(0, 2, 4, 3);
        assertEquals(-1, index.allocateFirstFit(4 * K));
        assertEquals(expected(0, 2, 4, 3), blocks(index));
        assertEquals(5 * K, index.freeBytes());
    }

    @Test
    void freeCoalescesWithThePredecessor() {
        FreeBlockIndex index = indexOf(0, 4, 10, 2);
        index.free(4 * K, 2 * K);
        assertEquals(expected(0, 6, 10, 2), blocks(index));
        index.checkInvariants();
    }

    @Test
    void freeCoalescesWithTheSuccessor() {
        FreeBlockIndex index = indexOf(0, 2, 10, 2);
        index.free(7 * K, 3 * K);
        assertEquals(expected(0, 2, 7, 5), blocks(index));
        index.checkInvariants();
    }

    @Test
    void freeCoalescesWithBothNeighboursIntoOneBlock() {
        FreeBlockIndex index = indexOf(0, 2, 4, 2, 10, 2);
        index.free(2 * K, 2 * K);
        assertEquals(expected(0, 6, 10, 2), blocks(index));
        assertEquals(2, index.blockCount());
        index.free(6 * K, 4 * K);
        assertEquals(expected(0, 12), blocks(index));
        assertEquals(1, index.blockCount());
        assertEquals(12 * K, index.largestBlock());
        index.checkInvariants();
    }

    @Test
    void freeWithoutTouchingNeighboursInsertsANewBlock() {
        FreeBlockIndex index = indexOf(0, 2, 10, 2);
        index.free(5 * K, 2 * K);
        assertEquals(expected(0, 2, 5, 2, 10, 2), blocks(index));
        assertEquals(3, index.blockCount());
        index.checkInvariants();
    }

    @Test
    void aBoundaryPreventsMergingWithThePredecessor() {
        FreeBlockIndex index = indexOf(0, 4);
        index.addBoundary(4 * K);
        index.free(4 * K, 4 * K);
        assertEquals(expected(0, 4, 4, 4), blocks(index));
        assertTrue(index.isFullyCoalesced());
        assertEquals(-1, index.allocateFirstFit(5 * K)); // the two regions never form one slice
        index.checkInvariants();
    }

    @Test
    void aBoundaryPreventsMergingWithTheSuccessor() {
        FreeBlockIndex index = new FreeBlockIndex();
        index.addBoundary(8 * K);
        index.free(8 * K, 4 * K);
        index.free(4 * K, 4 * K);
        assertEquals(expected(4, 4, 8, 4), blocks(index));
        index.free(0, 4 * K); // merges with [4,8) but still not across 8
        assertEquals(expected(0, 8, 8, 4), blocks(index));
        index.checkInvariants();
    }

    @Test
    void aBlockSpanningBoundariesIsSplitAtEachAndThePiecesStillCoalesceOutward() {
        FreeBlockIndex index = indexOf(0, 2, 20, 4);
        index.addBoundary(5 * K);
        index.addBoundary(12 * K);
        index.free(2 * K, 18 * K); // [2,20) touches [0,2) and [20,24), spans 5 and 12
        assertEquals(expected(0, 5, 5, 7, 12, 12), blocks(index));
        assertTrue(index.isFullyCoalesced());
        index.checkInvariants();
    }

    @Test
    void addingABoundaryInsideAFreeBlockSplitsIt() {
        FreeBlockIndex index = indexOf(0, 10);
        index.addBoundary(3 * K);
        assertEquals(expected(0, 3, 3, 7), blocks(index));
        assertEquals(10 * K, index.freeBytes());
        index.addBoundary(3 * K); // again: nothing changes
        index.addBoundary(10 * K); // at a block's end: nothing to split
        assertEquals(expected(0, 3, 3, 7), blocks(index));
        index.checkInvariants();
    }

    @Test
    void aDoubleFreeThrowsNamingBothRangesAndChangesNothing() {
        FreeBlockIndex index = indexOf(0, 4, 10, 4);
        List<Block> before = blocks(index);
        long[][] overlapping = {{0, 4}, {2, 4}, {8, 4}, {12, 4}, {11, 1}, {9, 6}, {3, 8}};
        for (long[] r : overlapping) {
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> index.free(r[0] * K, r[1] * K));
            assertTrue(e.getMessage().contains("[" + r[0] * K + ", " + (r[0] + r[1]) * K + ")"), e.getMessage());
            assertTrue(e.getMessage().contains("[0, " + 4 * K + ")") || e.getMessage().contains("[" + 10 * K + ", " + 14 * K + ")"),
                    e.getMessage());
            assertEquals(before, blocks(index));
            assertEquals(8 * K, index.freeBytes());
            index.checkInvariants();
        }
    }

    @Test
    void aRejectedDoubleFreeAcrossABoundaryInsertsNoPiece() {
        FreeBlockIndex index = indexOf(8, 2);
        index.addBoundary(4 * K);
        assertThrows(IllegalStateException.class, () -> index.free(0, 9 * K));
        assertEquals(expected(8, 2), blocks(index));
        index.checkInvariants();
    }

    @Test
    void aBatchCarvesWholeSlotsFromSeveralBlocksInAddressOrder() {
        // 3.5 units, half a unit, 2 units, 4 units (unit = 2K)
        FreeBlockIndex index = indexOf(0, 7, 10, 1, 20, 4, 30, 8);
        long[] out = new long[7];
        assertTrue(index.allocateBatch(2 * K, 6, out));
        assertArrayEquals(new long[] {0, 2 * K, 4 * K, 20 * K, 22 * K, 30 * K, 0}, out);
        // [0,7) keeps its 1K tail, [10,11) is untouched, [20,24) is used up, [30,38) gives one slot
        assertEquals(expected(6, 1, 10, 1, 32, 6), blocks(index));
        assertEquals(8 * K, index.freeBytes());
        index.checkInvariants();
    }

    @Test
    void aBatchThatFitsInTheFirstBlockIsContiguous() {
        FreeBlockIndex index = indexOf(0, 100);
        long[] out = new long[3];
        assertTrue(index.allocateBatch(10 * K, 3, out));
        assertArrayEquals(new long[] {0, 10 * K, 20 * K}, out);
        assertEquals(expected(30, 70), blocks(index));
    }

    @Test
    void aBatchThatCannotBeSatisfiedModifiesNothing() {
        FreeBlockIndex index = indexOf(0, 3, 5, 3, 10, 3); // 9K free, but only 3 slots of 2K
        long[] out = {-7, -7, -7, -7};
        assertFalse(index.allocateBatch(2 * K, 4, out));
        assertArrayEquals(new long[] {-7, -7, -7, -7}, out);
        assertEquals(expected(0, 3, 5, 3, 10, 3), blocks(index));
        assertEquals(9 * K, index.freeBytes());
        assertFalse(index.allocateBatch(10 * K, 1, out)); // unit larger than any block
        assertFalse(index.allocateBatch(K, 10, new long[10])); // more bytes than are free
        assertEquals(expected(0, 3, 5, 3, 10, 3), blocks(index));
        index.checkInvariants();
    }

    @Test
    void largestBlockFollowsTheTree() {
        FreeBlockIndex index = indexOf(0, 1, 4, 9, 20, 3);
        assertEquals(9 * K, index.largestBlock());
        index.allocateFirstFit(8 * K);
        assertEquals(3 * K, index.largestBlock());
    }

    @Test
    void forEachVisitsInAddressOrderWhateverTheInsertionOrder() {
        FreeBlockIndex index = new FreeBlockIndex();
        for (long s : new long[] {50, 10, 90, 30, 70, 0, 20}) {
            index.free(s * K, K);
        }
        assertEquals(expected(0, 1, 10, 1, 20, 1, 30, 1, 50, 1, 70, 1, 90, 1), blocks(index));
        index.checkInvariants();
    }

    @Test
    void isFullyCoalescedHoldsThroughEveryOperation() {
        FreeBlockIndex index = indexOf(0, 4, 6, 4);
        assertTrue(index.isFullyCoalesced());
        index.free(4 * K, 2 * K);
        assertTrue(index.isFullyCoalesced());
        assertEquals(1, index.blockCount());
    }

    @Test
    void toStringListsBlocksAndTruncatesLongLists() {
        FreeBlockIndex small = indexOf(0, 1, 2, 1);
        assertEquals("FreeBlockIndex{blocks=2, freeBytes=8192, largest=4096, boundaries=0, [[0, 4096), [8192, 12288)]}",
                small.toString());
        FreeBlockIndex big = new FreeBlockIndex();
        for (int i = 0; i < 100; i++) {
            big.free(2L * i, 1);
        }
        String text = big.toString();
        assertTrue(text.contains("[38, 39)"), text);
        assertFalse(text.contains("[40, 41)"), text);
        assertTrue(text.contains("80 more"), text);
    }

    @Test
    void arraysGrowPastTheirInitialCapacityForAHundredThousandBlocks() {
        int n = 100_000;
        FreeBlockIndex index = new FreeBlockIndex();
        // Insert in a scrambled order so rotations of every kind happen.
        for (int i = 0; i < n; i++) {
            long slot = (i * 7919L) % n; // 7919 is prime and does not divide n: a permutation
            index.free(slot * 2 * K, K);
        }
        assertEquals(n, index.blockCount());
        assertEquals(n * K, index.freeBytes());
        assertTrue(index.nodeCapacity() >= n);
        index.checkInvariants();
        // Fill every gap: each free merges with both neighbours, leaving one block.
        for (int i = 0; i < n; i++) {
            long slot = (i * 7919L) % n;
            if (slot != n - 1) {
                index.free(slot * 2 * K + K, K);
            }
        }
        assertEquals(1, index.blockCount());
        assertEquals((2L * n - 1) * K, index.largestBlock());
        index.checkInvariants();
        // Carve it back into pieces and check first fit still picks the lowest address.
        for (int i = 0; i < n; i++) {
            assertEquals(i * K, index.allocateFirstFit(K));
        }
        index.checkInvariants();
    }

    @Test
    void nodeIdsAreRecycledSoSteadyStateDoesNotGrow() {
        FreeBlockIndex index = indexOf(0, 1024);
        long[] live = new long[512];
        for (int round = 0; round < 3; round++) {
            for (int i = 0; i < live.length; i++) {
                live[i] = index.allocateFirstFit(2 * K);
            }
            for (int i = 0; i < live.length; i += 2) {
                index.free(live[i], 2 * K);
            }
            for (int i = 1; i < live.length; i += 2) {
                index.free(live[i], 2 * K);
            }
        }
        int capacity = index.nodeCapacity();
        for (int round = 0; round < 10; round++) {
            for (int i = 0; i < live.length; i++) {
                live[i] = index.allocateFirstFit(2 * K);
            }
            for (int i = 0; i < live.length; i += 2) {
                index.free(live[i], 2 * K);
            }
            for (int i = 1; i < live.length; i += 2) {
                index.free(live[i], 2 * K);
            }
        }
        assertEquals(capacity, index.nodeCapacity());
        assertEquals(expected(0, 1024), blocks(index));
        index.checkInvariants();
    }

    @Test
    void badArgumentsAreRejectedWithWhatWasWrong() {
        FreeBlockIndex index = indexOf(0, 4);
        assertMessage("block size must be > 0, was 0", () -> index.free(0, 0));
        assertMessage("block size must be > 0, was -4096", () -> index.free(8 * K, -K));
        assertMessage("block start must be >= 0, was -1", () -> index.free(-1, K));
        assertMessage("ends past Long.MAX_VALUE", () -> index.free(Long.MAX_VALUE - 10, 11));
        assertMessage("allocation size must be > 0, was 0", () -> index.allocateFirstFit(0));
        assertMessage("allocation size must be > 0, was -1", () -> index.allocateFirstFit(-1));
        assertMessage("batch unit must be > 0 bytes, was 0", () -> index.allocateBatch(0, 1, new long[1]));
        assertMessage("batch count must be >= 1, was 0", () -> index.allocateBatch(K, 0, new long[1]));
        assertMessage("out has room for 1 addresses, 2 needed", () -> index.allocateBatch(K, 2, new long[1]));
        assertMessage("boundary address must be >= 0, was -5", () -> index.addBoundary(-5));
        assertThrows(NullPointerException.class, () -> index.allocateBatch(K, 1, null));
        assertEquals(expected(0, 4), blocks(index));
        index.checkInvariants();
    }

    @Test
    void theModelAgreesOnTheHandWrittenCases() {
        // Sanity check of the oracle itself on a case worked out by hand above.
        LinearFirstFitModel model = new LinearFirstFitModel();
        for (long[] b : new long[][] {{0, 7}, {10, 1}, {20, 4}, {30, 8}}) {
            model.free(b[0] * K, b[1] * K);
        }
        long[] out = new long[6];
        assertTrue(model.allocateBatch(2 * K, 6, out));
        assertEquals(Arrays.toString(new long[] {0, 2 * K, 4 * K, 20 * K, 22 * K, 30 * K}), Arrays.toString(out));
        assertEquals(expected(6, 1, 10, 1, 32, 6), model.blocks());
    }

    private static void assertMessage(String fragment, Runnable call) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, call::run);
        assertTrue(e.getMessage().contains(fragment), () -> "'" + e.getMessage() + "' lacks '" + fragment + "'");
    }
}
