package lmcache4j.server.mp.wire;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HexFormat;
import java.util.List;
import java.util.OptionalInt;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/**
 * The edges of a key's fields (the largest world, the last worker, a salt's forbidden characters),
 * which fields make two keys the same cache entry, and the messages an op frame or a wrong arity
 * is refused with.
 */
class MpKeysAndOpsEdgesTest {
    private static final int[] TOKENS = {1, 2, 3};

    private static IpcCacheServerKey key(String model, int worldSize, OptionalInt worker, int[] tokens, String requestId,
                                         String salt, int readers) {
        return new IpcCacheServerKey(model, worldSize, worker, tokens, 0, 3, requestId, salt, readers);
    }

    private static IpcCacheServerKey key(int worldSize, OptionalInt worker) {
        return key("m", worldSize, worker, TOKENS, "r", "", 0);
    }

    private static void refused(String cause, Executable make) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, make);
        assertTrue(e.getMessage().contains(cause), e.getMessage() + " should say: " + cause);
    }

    @Test
    void theLargestWorldAndItsLastWorkerAreKeysAndOneMoreIsNot() {
        int max = IpcCacheServerKey.MAX_WORLD_SIZE;
        assertEquals(max, key(max, OptionalInt.of(max - 1)).worldSize());
        refused("world_size " + (max + 1), () -> key(max + 1, OptionalInt.empty()));
        refused("world_size 0", () -> key(0, OptionalInt.empty()));
        refused("worker_id 2 (expected 0..1 or nil)", () -> key(2, OptionalInt.of(2)));
        refused("worker_id -1", () -> key(2, OptionalInt.of(-1)));
        refused("model_name must not contain '@'", () -> key("@m", 1, OptionalInt.empty(), TOKENS, "r", "", 0));
        refused("found NUL at 1", () -> key("m", 1, OptionalInt.empty(), TOKENS, "r", "a\0", 0));
        refused("found '/' at 0", () -> key("m", 1, OptionalInt.empty(), TOKENS, "r", "/a", 0));
        refused("range [0, -1)", () -> new IpcCacheServerKey("m", 1, OptionalInt.empty(), TOKENS, 0, -1, "r", "", 0));
        assertEquals(0, new IpcCacheServerKey("m", 1, OptionalInt.empty(), TOKENS, 0, 0, "r", "", 0).end(),
                "an empty range is a key");
    }

    @Test
    void readersDefaultToOneWhenNotSent() {
        assertEquals(1, key("m", 1, OptionalInt.empty(), TOKENS, "r", "", 0).effectiveKvReaders());
        assertEquals(3, key("m", 1, OptionalInt.empty(), TOKENS, "r", "", 3).effectiveKvReaders());
    }

    @Test
    void theRequestAndItsReaderCountAreNotPartOfTheCacheIdentityButEveryOtherFieldIs() {
        IpcCacheServerKey base = key("m", 2, OptionalInt.of(1), TOKENS, "r", "s", 1);
        IpcCacheServerKey same = key("m", 2, OptionalInt.of(1), TOKENS.clone(), "r", "s", 1);
        assertEquals(base, same);
        assertEquals(base.hashCode(), same.hashCode());
        for (IpcCacheServerKey otherRequest : List.of(key("m", 2, OptionalInt.of(1), TOKENS, "q", "s", 1),
                key("m", 2, OptionalInt.of(1), TOKENS, "r", "s", 2))) {
            assertTrue(base.sameCacheIdentity(otherRequest), otherRequest.toString());
            assertNotEquals(base, otherRequest, "as records they differ");
        }
        for (IpcCacheServerKey other : List.of(key("n", 2, OptionalInt.of(1), TOKENS, "r", "s", 1),
                key("m", 3, OptionalInt.of(1), TOKENS, "r", "s", 1), key("m", 2, OptionalInt.of(0), TOKENS, "r", "s", 1),
                key("m", 2, OptionalInt.of(1), new int[] {1, 2, 4}, "r", "s", 1),
                key("m", 2, OptionalInt.of(1), TOKENS, "r", "t", 1))) {
            assertFalse(base.sameCacheIdentity(other), other.toString());
            assertNotEquals(base, other, other.toString());
        }
    }

    @Test
    void objectKeysDifferInEachField() {
        byte[] hash = new byte[MpTokenHasher.DIGEST_BYTES];
        byte[] otherHash = hash.clone();
        otherHash[31] = 1;
        MpObjectKey base = new MpObjectKey(hash, "m", MpObjectKey.kvRank(2, 1), 0, "");
        assertEquals(base, new MpObjectKey(hash.clone(), "m", MpObjectKey.kvRank(2, 1), 0, ""));
        for (MpObjectKey other : List.of(new MpObjectKey(otherHash, "m", MpObjectKey.kvRank(2, 1), 0, ""),
                new MpObjectKey(hash, "n", MpObjectKey.kvRank(2, 1), 0, ""),
                new MpObjectKey(hash, "m", MpObjectKey.kvRank(2, 0), 0, ""),
                new MpObjectKey(hash, "m", MpObjectKey.kvRank(2, 1), 1, ""),
                new MpObjectKey(hash, "m", MpObjectKey.kvRank(2, 1), 0, "s"))) {
            assertNotEquals(base, other, other.toString());
        }
    }

    @Test
    void anOpNameLongerThanItsFrameOrThanAnyNameIsRefusedSayingWhy() {
        MpProtocolException truncated = assertThrows(MpProtocolException.class,
                () -> MpOperation.decode(HexFormat.of().parseHex("a5706970"))); // fixstr of 5, 3 bytes follow
        assertEquals(MpDropReason.BAD_OP, truncated.reason());
        assertTrue(truncated.getMessage().contains("declares 5 bytes but the frame has 3 left"), truncated.getMessage());

        String longest = "x".repeat(MpOperation.MAX_NAME_BYTES);
        MpProtocolException unknown = assertThrows(MpProtocolException.class,
                () -> MpOperation.decode(MpScalars.encodeString(longest)));
        assertEquals(MpDropReason.UNKNOWN_OP, unknown.reason());
        assertTrue(unknown.getMessage().contains("unknown op name"), "a name of the longest length is looked up: "
                + unknown.getMessage());
        MpProtocolException tooLong = assertThrows(MpProtocolException.class,
                () -> MpOperation.decode(MpScalars.encodeString(longest + "x")));
        assertTrue(tooLong.getMessage().contains("op name of 129 bytes"), tooLong.getMessage());
    }

    @Test
    void aWrongArityNamesTheCountsExpected() {
        byte[] id = {9};
        byte[] uid = {5};
        List<byte[]> endSession = List.of(id, uid, MpScalars.encodeString("end_session"));
        MpProtocolException none = assertThrows(MpProtocolException.class, () -> MpFrames.parse(endSession));
        assertTrue(none.getMessage().contains("end_session with 0 argument frames (expected 1 or 2)"), none.getMessage());
        List<byte[]> chunkSize = List.of(id, uid, MpScalars.encodeInt(21), MpScalars.encodeNil());
        MpProtocolException one = assertThrows(MpProtocolException.class, () -> MpFrames.parse(chunkSize));
        assertTrue(one.getMessage().contains("get_chunk_size with 1 argument frames (expected 0)"), one.getMessage());
    }
}
