package lmcache4j.server.mp.wire;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.OptionalInt;
import java.util.Random;

import org.junit.jupiter.api.Test;

/**
 * BLAKE3 and LMCache's token chain against known vectors (docs/design/mp-server.md §5; every
 * value below was also computed with Debian's {@code b3sum}), the incremental chain against
 * hashing from scratch, and the key → object-key expansion.
 */
class MpTokenHasherTest {
    private static final HexFormat HEX = HexFormat.of();

    private static byte[] pattern(int length) { // the official BLAKE3 test vectors' input
        byte[] b = new byte[length];
        for (int i = 0; i < length; i++) {
            b[i] = (byte) (i % 251);
        }
        return b;
    }

    @Test
    void blake3MatchesOfficialVectors() {
        assertEquals("af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262",
                HEX.formatHex(MpTokenHasher.digestOf(new byte[0])));
        assertEquals("2d3adedff11b61f14c886e35afa036736dcd87a74d27b5c1510225d0f592e213",
                HEX.formatHex(MpTokenHasher.digestOf(pattern(1))));
        assertEquals("42214739f095a406f3fc83deb889744ac00df831c10daa55189b5d121c855af7",
                HEX.formatHex(MpTokenHasher.digestOf(pattern(1024))));
        assertEquals("b98cb0ff3623be03326b373de6b9095218513e64f1ee2edd2525c7ad1e5cffd2",
                HEX.formatHex(MpTokenHasher.digestOf(pattern(3072))));
    }

    @Test
    void startValueIsBlake3OfTwelveZeroBytes() {
        assertEquals("7e3eff9ef7613a50340eb12677ee03b83ac759fcba9bb32705f07248d56d473b",
                HEX.formatHex(MpTokenHasher.startValue()));
    }

    @Test
    void chainOfTokensZeroTo511MatchesTheDesignVectors() {
        int[] tokens = new int[512 + 100]; // a partial tail chunk is never hashed
        Arrays.setAll(tokens, i -> i);
        byte[] all = new MpTokenHasher(256).hashAll(tokens);
        assertEquals(64, all.length);
        assertEquals("084547b6c40ed5b05ba8cd0305db5bf74d5617673948d9ed193ab7d6cbc484d4",
                HEX.formatHex(all, 0, 32));
        assertEquals("e5ffee45c2b9db326814c9692dc594369887ba3b0df5761817820b60f864c8e0",
                HEX.formatHex(all, 32, 64));
    }

    @Test
    void tokensAreBigEndianUnsigned32() {
        int[] tokens = {MpTokenHasher.checkToken(0xFFFF_FFFFL), 1};
        byte[] input = new byte[32 + 8];
        System.arraycopy(MpTokenHasher.startValue(), 0, input, 0, 32);
        byte[] tail = {(byte) 0xff, (byte) 0xff, (byte) 0xff, (byte) 0xff, 0, 0, 0, 1};
        System.arraycopy(tail, 0, input, 32, 8);
        assertArrayEquals(MpTokenHasher.digestOf(input), new MpTokenHasher(2).hashAll(tokens));
        assertThrows(IllegalArgumentException.class, () -> MpTokenHasher.checkToken(-1));
        assertThrows(IllegalArgumentException.class, () -> MpTokenHasher.checkToken(1L << 32));
    }

    @Test
    void incrementalChainEqualsHashingFromScratch() {
        Random random = new Random(26);
        for (int trial = 0; trial < 200; trial++) {
            int chunk = 1 + random.nextInt(16);
            MpHashChain chain = new MpHashChain(chunk);
            MpTokenHasher scratch = new MpTokenHasher(chunk);
            int[] tokens = new int[0];
            for (int step = 0; step < 8; step++) {
                int[] next = Arrays.copyOf(tokens, Math.max(0, tokens.length + random.nextInt(5 * chunk) - chunk));
                for (int i = tokens.length; i < next.length; i++) {
                    next[i] = random.nextInt();
                }
                if (next.length > 0 && random.nextInt(4) == 0) { // an earlier token differs: the chain must rehash from it
                    next[random.nextInt(next.length)] ^= 1;
                }
                int before = chain.chunkCount();
                int hashed = chain.update(next);
                byte[] expected = scratch.hashAll(next);
                assertEquals(expected.length / 32, chain.chunkCount());
                for (int c = 0; c < chain.chunkCount(); c++) {
                    assertArrayEquals(Arrays.copyOfRange(expected, 32 * c, 32 * c + 32), chain.hash(c));
                }
                int newChunks = chain.chunkCount();
                int compared = Math.min(before, newChunks) * chunk;
                int mismatch = Arrays.mismatch(tokens, 0, compared, next, 0, compared);
                int kept = (mismatch < 0 ? compared : mismatch) / chunk;
                assertEquals(newChunks - kept, hashed, "only chunks after the unchanged prefix are hashed");
                assertEquals(hashed, chain.lastHashed());
                tokens = next;
            }
        }
    }

    @Test
    void aLongerPromptHashesOnlyItsNewChunks() {
        MpHashChain chain = new MpHashChain(4);
        int[] tokens = new int[40];
        Arrays.setAll(tokens, i -> i * 7);
        assertEquals(10, chain.update(Arrays.copyOf(tokens, 40)));
        int[] longer = Arrays.copyOf(tokens, 50);
        assertEquals(2, chain.update(longer));
        longer[5] = -1; // chunk 1 changed: chunks 1.. are rehashed, chunk 0 is kept
        assertEquals(11, chain.update(longer));
        assertEquals(0, chain.update(longer));
    }

    @Test
    void kvRankPacksWorldSizeAndRank() {
        assertEquals(0x0402_0402L, MpObjectKey.kvRank(4, 2));
        assertEquals(0x0100_0100L, MpObjectKey.kvRank(1, 0));
        assertEquals(0xFFFE_FFFEL, MpObjectKey.kvRank(255, 254));
        assertThrows(IllegalArgumentException.class, () -> MpObjectKey.kvRank(2, 2));
    }

    @Test
    void expansionIsChunkMajorRankMinorAndHashesFromTokenZero() throws Exception {
        int[] tokens = new int[4 * 8 + 3];
        Arrays.setAll(tokens, i -> 1000 + i);
        byte[] all = new MpTokenHasher(8).hashAll(tokens);
        IpcCacheServerKey lookup = new IpcCacheServerKey("m", 3, OptionalInt.empty(), tokens, 8, 24, "r", "s", 0);
        List<MpObjectKey> keys = MpKeyExpansion.objectKeys(lookup, new MpHashChain(8));
        assertEquals(6, keys.size());
        for (int i = 0; i < 6; i++) {
            int chunk = 1 + i / 3;
            assertArrayEquals(Arrays.copyOfRange(all, 32 * chunk, 32 * chunk + 32), keys.get(i).chunkHash());
            assertEquals(MpObjectKey.kvRank(3, i % 3), keys.get(i).kvRank());
            assertEquals("s", keys.get(i).cacheSalt());
            assertEquals(0, keys.get(i).objectGroupId());
        }
        IpcCacheServerKey worker = new IpcCacheServerKey("m", 3, OptionalInt.of(2), tokens, 0, 32, "r", "", 0);
        List<MpObjectKey> mine = MpKeyExpansion.objectKeys(worker, new MpHashChain(8));
        assertEquals(4, mine.size());
        assertEquals(MpObjectKey.kvRank(3, 2), mine.get(3).kvRank());
    }

    @Test
    void misalignedOrOutOfRangeKeysAreClearErrors() {
        int[] tokens = new int[20];
        for (int[] range : new int[][] {{0, 12}, {4, 16}, {0, 24}, {16, 8}}) {
            IpcCacheServerKey key = new IpcCacheServerKey("m", 1, OptionalInt.of(0), tokens, range[0], range[1], "r", "", 0);
            MpProtocolException e = assertThrows(MpProtocolException.class,
                    () -> MpKeyExpansion.objectKeys(key, new MpHashChain(8)));
            assertEquals(MpDropReason.BAD_ARGUMENT, e.reason());
        }
    }
}
