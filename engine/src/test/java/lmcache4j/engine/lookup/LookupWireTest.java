package lmcache4j.engine.lookup;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

import org.junit.jupiter.api.Test;

/**
 * LMCache's lookup frames: bytes checked by hand against the msgpack spec (the same bytes
 * msgpack-python and msgspec write for lists of ints; the tests module checks them against
 * Python), round trips, refusals with reasons, and a bounded fuzz: a mutated message is decoded or
 * refused as malformed, never anything else.
 */
class LookupWireTest {
    private static final HexFormat HEX = HexFormat.of();

    @Test
    void integersTakeTheSmallestMsgpackFormat() {
        long[] values = {0, 127, 128, 255, 256, 65535, 65536, 0xffff_ffffL, 0x1_0000_0000L, Long.MAX_VALUE, -1L};
        String expected = "9b" + "00" + "7f" + "cc80" + "ccff" + "cd0100" + "cdffff" + "ce00010000" + "ceffffffff"
                + "cf0000000100000000" + "cf7fffffffffffffff" + "cfffffffffffffffff";
        assertEquals(expected, HEX.formatHex(MsgpackInts.encodeUnsigned(values)));
    }

    @Test
    void arrayHeadersGrowWithTheCount() throws Exception {
        assertEquals("90", HEX.formatHex(MsgpackInts.encodeUnsigned(new long[0])));
        assertEquals("dc0010", HEX.formatHex(MsgpackInts.encodeUnsigned(new long[16])).substring(0, 6));
        assertEquals("dd00010000", HEX.formatHex(MsgpackInts.encodeUnsigned(new long[65536])).substring(0, 10));
        assertEquals(65536, MsgpackInts.decode(MsgpackInts.encodeUnsigned(new long[65536]), "x").length);
    }

    @Test
    void signedFormatsFromPythonAreRead() throws Exception {
        // [-1, -32, -33, -129, -32769, -2147483649] as Python writes them
        byte[] frame = HEX.parseHex("96" + "ff" + "e0" + "d0df" + "d1ff7f" + "d2ffff7fff" + "d3ffffffff7fffffff");
        assertArrayEquals(new long[]{-1, -32, -33, -129, -32769, -2147483649L}, MsgpackInts.decode(frame, "x"));
    }

    @Test
    void aRequestIsFourFramesAsLmcacheBuildsThem() throws Exception {
        Map<String, String> configs = new LinkedHashMap<>();
        configs.put("lmcache.tag.user", "alice");
        configs.put("k", "v%w");
        LookupRequest request = new LookupRequest("req-1", new long[]{5, 0x8000_0000_0000_0001L}, new int[]{256, 17},
                configs);
        List<byte[]> frames = LookupWire.encodeRequest(request);
        assertEquals(4, frames.size());
        assertEquals("req-1", new String(frames.get(0), StandardCharsets.UTF_8));
        assertEquals("9205cf8000000000000001", HEX.formatHex(frames.get(1)));
        assertEquals("92cd010011", HEX.formatHex(frames.get(2)));
        assertEquals("lmcache.tag.user%alice@k%v%w", new String(frames.get(3), StandardCharsets.UTF_8));
        List<byte[]> two = new ArrayList<>(frames);
        two.addAll(LookupWire.encodeRequest(new LookupRequest("req-2", new long[0], new int[0], Map.of())));
        assertEquals(List.of(request, new LookupRequest("req-2", new long[0], new int[0], Map.of())),
                LookupWire.decodeRequests(two), "several requests in one message, as LMCache allows");
    }

    @Test
    void aResponseIsTheIdAndFourBigEndianBytes() throws Exception {
        List<byte[]> frames = LookupWire.encodeResponse(new LookupResponse("r", 70000));
        assertEquals("00011170", HEX.formatHex(frames.get(1)));
        assertEquals(new LookupResponse("r", 70000), LookupWire.decodeResponse(frames));
    }

    @Test
    void malformedMessagesAreRefusedWithTheReason() {
        byte[] ints = MsgpackInts.encodeUnsigned(new long[]{1});
        byte[] id = "x".getBytes(StandardCharsets.UTF_8);
        assertMalformed("4 frames per request", List.of(id, ints, ints));
        assertMalformed("not UTF-8", List.of(new byte[]{(byte) 0xff}, ints, ints, new byte[0]));
        assertMalformed("expected a msgpack array", List.of(id, new byte[]{0x01}, ints, new byte[0]));
        assertMalformed("expected a msgpack integer", List.of(id, HEX.parseHex("91a161"), ints, new byte[0]));
        assertMalformed("claims 4294967295 elements", List.of(id, HEX.parseHex("ddffffffff01"), ints, new byte[0]));
        assertMalformed("bytes after the array", List.of(id, HEX.parseHex("910100"), ints, new byte[0]));
        assertMalformed("ends inside", List.of(id, HEX.parseHex("91cd01"), ints, new byte[0]));
        assertMalformed("1 chunk hashes but 2", List.of(id, ints, MsgpackInts.encodeUnsigned(new long[]{1, 2}), new byte[0]));
        assertMalformed("has 0 tokens", List.of(id, ints, MsgpackInts.encodeUnsigned(new long[]{0}), new byte[0]));
        assertMalformed("key%value", List.of(id, ints, ints, "a@b%c".getBytes(StandardCharsets.UTF_8)));
        assertMalformed("at most 4096", List.of(new byte[5000], ints, ints, new byte[0]));
        MalformedLookupMessageException e = assertThrows(MalformedLookupMessageException.class,
                () -> LookupWire.decodeResponse(List.of(id, new byte[3])));
        assertTrue(e.getMessage().contains("expected 4"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> LookupWire.encodeConfigs(Map.of("a@b", "c")));
    }

    private static void assertMalformed(String reason, List<byte[]> frames) {
        MalformedLookupMessageException e = assertThrows(MalformedLookupMessageException.class,
                () -> LookupWire.decodeRequests(frames));
        assertTrue(e.getMessage().contains(reason), "expected '" + reason + "' in: " + e.getMessage());
    }

    /** 100,000 mutated messages (-Dlmcache4j.fuzz.lookup=N for more): each decodes or is refused as malformed. */
    @Test
    void mutatedMessagesAreDecodedOrRefusedNeverAnythingElse() {
        int rounds = Integer.getInteger("lmcache4j.fuzz.lookup", 100_000);
        Random random = new Random(14);
        List<byte[]> valid = LookupWire.encodeRequest(new LookupRequest("fuzz", new long[]{1, 300, -5, 1L << 40},
                new int[]{256, 256, 256, 12}, Map.of("lmcache.tag.a", "b")));
        int refused = 0;
        for (int round = 0; round < rounds; round++) {
            List<byte[]> frames = new ArrayList<>();
            for (byte[] f : valid) {
                frames.add(f.clone());
            }
            byte[] target = frames.get(random.nextInt(frames.size()));
            switch (random.nextInt(4)) {
                case 0 -> { if (target.length > 0) target[random.nextInt(target.length)] = (byte) random.nextInt(256); }
                case 1 -> frames.set(random.nextInt(frames.size()), java.util.Arrays.copyOf(target, random.nextInt(target.length + 1)));
                case 2 -> frames.remove(random.nextInt(frames.size()));
                default -> { byte[] junk = new byte[random.nextInt(12)]; random.nextBytes(junk); frames.set(random.nextInt(frames.size()), junk); }
            }
            try {
                LookupWire.decodeRequests(frames);
            } catch (MalformedLookupMessageException e) {
                refused++;
            }
        }
        assertTrue(refused > rounds / 4, refused + " of " + rounds + " mutations refused: the fuzz does not mutate");
    }
}
