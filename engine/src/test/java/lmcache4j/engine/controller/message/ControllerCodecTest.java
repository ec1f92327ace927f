package lmcache4j.engine.controller.message;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import lmcache4j.engine.controller.message.WorkerMsg.BatchedKVOperationMsg;
import lmcache4j.engine.controller.message.WorkerMsg.FullSyncBatchMsg;
import lmcache4j.engine.controller.message.WorkerMsg.KVAdmitMsg;
import lmcache4j.engine.controller.message.WorkerReqRetMsg.HeartbeatRetMsg;

import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.Size;
import org.junit.jupiter.api.Test;

/** Byte vectors written out by hand from the msgpack spec, and the decoder's refusals. */
class ControllerCodecTest {
    private static final HexFormat HEX = HexFormat.of();

    /** KVAdmitMsg(instance_id="i", worker_id=0, key=1, location="L") with the default seq_num 0. */
    private static final String SMALL_ADMIT = "86" // map of 6: type + 5 fields
            + "a4" + "74797065" + "aa" + "4b5641646d69744d7367" // "type": "KVAdmitMsg"
            + "ab" + "696e7374616e63655f6964" + "a1" + "69" // "instance_id": "i"
            + "a9" + "776f726b65725f6964" + "00" // "worker_id": 0
            + "a3" + "6b6579" + "01" // "key": 1
            + "a8" + "6c6f636174696f6e" + "a1" + "4c" // "location": "L"
            + "a7" + "7365715f6e756d" + "00"; // "seq_num": 0

    private static byte[] hex(String s) {
        return HEX.parseHex(s);
    }

    @Test
    void aSmallAdmitHasTheBytesWorkedOutByHand() throws Exception {
        KVAdmitMsg admit = new KVAdmitMsg("i", 0, 1, "L", 0);
        assertEquals(SMALL_ADMIT, HEX.formatHex(ControllerCodec.encode(admit)));
        assertEquals(admit, ControllerCodec.decode(hex(SMALL_ADMIT)));
    }

    @Test
    void aKeyWithTheTopBitSetIsAnUnsignedIntegerAndASignedOneDecodesToTheSameBits() throws Exception {
        String unsigned = SMALL_ADMIT.replace("a36b657901", "a36b6579cfffffffffffffffff");
        String signed = SMALL_ADMIT.replace("a36b657901", "a36b6579ff"); // -1 as a negative fixint (CPython hash)
        KVAdmitMsg admit = new KVAdmitMsg("i", 0, -1L, "L", 0);
        assertEquals(unsigned, HEX.formatHex(ControllerCodec.encode(admit)));
        assertEquals(admit, ControllerCodec.decode(hex(unsigned)));
        assertEquals(admit, ControllerCodec.decode(hex(signed)));
    }

    @Test
    void aHeartbeatReplyCarriesATaggedFullSyncCommand() throws Exception {
        String bytes = "82" + "a4" + "74797065" + "af" + "4865617274626561745265744d7367" // "type": "HeartbeatRetMsg"
                + "a8" + "636f6d6d616e6473" + "91" // "commands": [ one
                + "83" + "ac" + "636f6d6d616e645f74797065" + "a9" + "66756c6c5f73796e63" // "command_type": "full_sync"
                + "a6" + "726561736f6e" + "a1" + "72" // "reason": "r"
                + "a4" + "61726773" + "c0"; // "args": None ]
        HeartbeatRetMsg reply = new HeartbeatRetMsg(List.of(HeartbeatCommand.FullSyncCommand.because("r")));
        assertEquals(bytes, HEX.formatHex(ControllerCodec.encode(reply)));
        assertEquals(reply, ControllerCodec.decode(hex(bytes)));
    }

    @Test
    void missingFieldsWithDefaultsTakeThemAndUnknownFieldsAreSkipped() throws Exception {
        String noSeq = "85" + SMALL_ADMIT.substring(2, SMALL_ADMIT.indexOf("a77365715f6e756d"));
        assertEquals(new KVAdmitMsg("i", 0, 1, "L", 0), ControllerCodec.decode(hex(noSeq)));
        String extra = "87" + SMALL_ADMIT.substring(2) + "a5" + "6578747261" + "93010203"; // "extra": [1,2,3]
        assertEquals(new KVAdmitMsg("i", 0, 1, "L", 0), ControllerCodec.decode(hex(extra)));
    }

    @Test
    void anUnknownTypeIsItsOwnException() {
        String bytes = "81" + "a4" + "74797065" + "a6" + "4e65774d7367"; // {"type": "NewMsg"}
        UnknownMessageTypeException e = assertThrows(UnknownMessageTypeException.class,
                () -> ControllerCodec.decode(hex(bytes)));
        assertEquals("NewMsg", e.typeName());
    }

    private static MalformedMessageException refused(String hex) {
        MalformedMessageException e = assertThrows(MalformedMessageException.class,
                () -> ControllerCodec.decode(HEX.parseHex(hex)));
        assertTrue(!(e instanceof UnknownMessageTypeException), "malformed, not unknown: " + e.getMessage());
        return e;
    }

    private static void assertRefused(String hex, String reason) {
        String message = refused(hex).getMessage();
        assertTrue(message.contains(reason), "expected a reason with '" + reason + "': " + message);
    }

    @Test
    void malformedFramesAreRefusedWithAReason() {
        assertTrue(assertThrows(MalformedMessageException.class, () -> ControllerCodec.decode(new byte[0]))
                .getMessage().contains("empty"));
        assertRefused("93010203", "must be a map");
        assertRefused("81a3666f6f01", "\"type\"");
        assertRefused("85" + SMALL_ADMIT.substring(2, SMALL_ADMIT.indexOf("a3" + "6b6579")) + "a8"
                + "6c6f636174696f6e" + "a1" + "4c" + "a7" + "7365715f6e756d" + "00", "missing required field 'key'");
        assertRefused(SMALL_ADMIT.replace("a9776f726b65725f696400", "a9776f726b65725f6964a130"), "worker_id must be an integer");
        assertRefused(SMALL_ADMIT + "00", "trailing");
        assertRefused(SMALL_ADMIT.replace("a9776f726b65725f696400", "a9776f726b65725f6964ce80000000"), "32-bit");
        assertRefused(SMALL_ADMIT.replace("a77365715f6e756d00", "a77365715f6e756dcf8000000000000000"), "out of range");
        assertRefused(SMALL_ADMIT.replace("a14c", "a2c328"), "UTF-8");
        assertRefused(SMALL_ADMIT.substring(0, SMALL_ADMIT.length() - 2), "frame ends");
        String twice = "87" + SMALL_ADMIT.substring(2) + "a3" + "6b6579" + "02";
        assertRefused(twice, "twice");
    }

    @Test
    void aHugeDeclaredLengthInATinyFrameFailsAtOnce() {
        // BatchedKVOperationMsg whose operations array declares 2^32-1 elements in a few bytes.
        String head = "85a474797065b5426174636865644b564f7065726174696f6e4d7367ab696e7374616e63655f6964a169"
                + "a9776f726b65725f696400a86c6f636174696f6ea14caa6f7065726174696f6e73";
        assertRefused(head + "dd7fffffff", "declares 2147483647 elements");
        assertRefused(head + "ddffffffff", "beyond 2^31-1");
        assertRefused(head + "dfffffffff", "must be an array");
        assertRefused("df7fffffff", "declares 2147483647 entries");
        assertRefused("81a4747970650bdbffffffff", "must be a string");
        assertRefused("81a474797065db7fffffff41", "declares 2147483647 bytes");
    }

    @Test
    void deepFreeFormArgumentsAreCut() {
        StringBuilder args = new StringBuilder();
        for (int i = 0; i <= MsgReader.MAX_ANY_DEPTH + 1; i++) {
            args.append("81a178"); // {"x": ...
        }
        args.append("00");
        String bytes = "82a474797065af4865617274626561745265744d7367a8636f6d6d616e6473" + "91"
                + "82ac636f6d6d616e645f74797065a966756c6c5f73796e63" + "a461726773" + args;
        assertRefused(bytes, "nested deeper");
    }

    @Test
    void freeFormArgumentsRoundTrip() throws Exception {
        Map<String, Object> args = new java.util.LinkedHashMap<>();
        args.put("n", 3L);
        args.put("f", 0.25);
        args.put("s", "x");
        args.put("b", true);
        args.put("none", null);
        args.put("list", List.of(1L, "two"));
        args.put("map", Map.of("k", 1L));
        HeartbeatRetMsg reply = new HeartbeatRetMsg(List.of(
                new HeartbeatCommand.FullSyncCommand(Optional.empty(), Optional.of(args)),
                new HeartbeatCommand.OtherCommand("future_command", Optional.of("why"), Optional.empty())));
        assertEquals(reply, ControllerCodec.decode(ControllerCodec.encode(reply)));
    }

    @Property
    void batchesOfAnyKeysAndSequenceNumbersRoundTrip(@ForAll @Size(max = 300) List<Long> keys,
                                                      @ForAll boolean evict, @ForAll long firstSeq) throws Exception {
        List<KVOpEvent> ops = new ArrayList<>();
        for (int i = 0; i < keys.size(); i++) {
            ops.add(new KVOpEvent(evict && i % 2 == 1 ? OpType.EVICT : OpType.ADMIT, keys.get(i),
                    Math.max(0, firstSeq) + i));
        }
        BatchedKVOperationMsg batch = new BatchedKVOperationMsg("inst-\u00e9", 3, "LocalCPUBackend", ops);
        assertEquals(batch, ControllerCodec.decode(ControllerCodec.encode(batch)));
        FullSyncBatchMsg sync = new FullSyncBatchMsg("inst", 1, "LocalDiskBackend", "s1", 7,
                keys.stream().mapToLong(Long::longValue).toArray());
        ControllerMessage back = ControllerCodec.decode(ControllerCodec.encode(sync));
        assertInstanceOf(FullSyncBatchMsg.class, back);
        assertEquals(sync, back);
    }
}
