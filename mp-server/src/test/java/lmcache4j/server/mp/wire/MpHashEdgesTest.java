package lmcache4j.server.mp.wire;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.OptionalInt;

import org.junit.jupiter.api.Test;

/**
 * The hash chain's and the hasher's edges: a chain that shrank has no digest past its end (its
 * buffer still holds the old one), a partial chunk is never hashed, the largest chunk size is
 * allowed, and an empty range expands to no object keys.
 */
class MpHashEdgesTest {
    private static final int CHUNK = 4;

    @Test
    void aChainThatShrankHasNoDigestPastItsEnd() {
        MpHashChain chain = new MpHashChain(CHUNK);
        chain.update(new int[] {1, 2, 3, 4, 5, 6, 7, 8});
        byte[] first = chain.hash(0);
        chain.update(new int[] {1, 2, 3, 4, 9});
        assertEquals(1, chain.chunkCount());
        assertArrayEquals(first, chain.hash(0), "the shared chunk is reused");
        assertThrows(IndexOutOfBoundsException.class, () -> chain.hash(1), "chunk 1 is gone though its bytes remain");
        assertThrows(IndexOutOfBoundsException.class, () -> chain.copyHash(1, new byte[32], 0));
        assertThrows(IndexOutOfBoundsException.class, () -> chain.hash(-1));
        byte[] out = new byte[40];
        chain.copyHash(0, out, 8);
        assertArrayEquals(first, java.util.Arrays.copyOfRange(out, 8, 40), "copyHash writes the digest at its offset");
        chain.update(new int[] {1, 2, 3, 4, 9, 9, 9, 9});
        chain.copyHash(1, out, 0);
        assertArrayEquals(chain.hash(1), java.util.Arrays.copyOf(out, 32), "and copies chunk 1's, not chunk 0's");
    }

    @Test
    void aPartialChunkIsNeverHashed() {
        MpTokenHasher hasher = new MpTokenHasher(CHUNK);
        byte[] out = new byte[MpTokenHasher.DIGEST_BYTES];
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> hasher.hashChunk(MpTokenHasher.startValue(), 0, new int[] {1, 2, 3, 4, 5}, 1, out, 0));
        assertTrue(e.getMessage().contains("chunk 1 is not a full chunk of 5 tokens"), e.getMessage());
    }

    @Test
    void theLargestChunkSizeIsAllowedAndOneMoreIsNot() {
        assertEquals(1 << 20, new MpTokenHasher(1 << 20).chunkSize());
        assertThrows(IllegalArgumentException.class, () -> new MpTokenHasher((1 << 20) + 1));
        assertThrows(IllegalArgumentException.class, () -> new MpTokenHasher(0));
    }

    @Test
    void anEmptyRangeExpandsToNoKeys() throws Exception {
        IpcCacheServerKey empty = new IpcCacheServerKey("m", 2, OptionalInt.empty(), new int[] {1, 2, 3, 4, 5, 6, 7, 8},
                CHUNK, CHUNK, "r", "", 0);
        assertEquals(0, MpKeyExpansion.objectKeys(empty, new MpHashChain(CHUNK)).size());
    }
}
