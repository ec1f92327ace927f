package lmcache4j.engine.pd.wire;

import static lmcache4j.engine.pd.wire.PdReceiveServerTest.CHUNK;
import static lmcache4j.engine.pd.wire.PdReceiveServerTest.CHUNK_BYTES;
import static lmcache4j.engine.pd.wire.PdReceiveServerTest.MODEL;
import static lmcache4j.engine.pd.wire.PdReceiveServerTest.TIMEOUT;
import static lmcache4j.engine.pd.wire.PdReceiveServerTest.TOKEN;
import static lmcache4j.engine.pd.wire.PdReceiveServerTest.decoder;
import static lmcache4j.engine.pd.wire.PdReceiveServerTest.tier;
import static lmcache4j.engine.pd.wire.PdReceiveServerTest.tokens;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;

import lmcache4j.allocator.MemoryFormat;
import lmcache4j.engine.LMCacheEngine;
import lmcache4j.engine.PreparedRequest;
import lmcache4j.engine.key.ChunkRange;
import lmcache4j.engine.pd.PdBackend;
import lmcache4j.engine.pd.PlanarKv;

/**
 * Writes the decoder's transfer port refuses, sent by a sender that holds the token (a buggy one,
 * or one that replays its own frames under fresh tags): a second write into a slot already written,
 * a write into a slot never given, and a write of another size are each answered REFUSED with the
 * payload read past, so the connection stays in step and the next good write lands; the first
 * write's bytes are what the decoder serves; each refusal is counted as a late write. (A refused
 * write whose payload stops coming: {@code PdConnectionHostileFramesTest}.)
 */
class PdReceiveServerRefusedWritesTest {
    private static final byte[] KEY = TOKEN.getBytes(StandardCharsets.UTF_8);

    /** Asks for room for {@code chunks} on the allocation port; the slots given, in order. */
    private static List<Long> room(PdReceiveServer server, List<ChunkRange> chunks) throws IOException {
        List<String> keys = new ArrayList<>();
        chunks.forEach(c -> keys.add(c.key().toKeyString()));
        try (PdConnection alloc = PdConnection.connect("127.0.0.1", server.allocPort(), KEY, TIMEOUT, 1 << 20)) {
            alloc.sendMessage(PdMessages.encode(new AllocRequest(keys, MemoryFormat.KV_2LTD.code(),
                    List.of(2, MODEL.numLayers(), CHUNK, MODEL.numKvHeads() * MODEL.headSize()), MODEL.kvDtype().keyName(),
                    CHUNK)));
            AllocResponse answer = PdMessages.decodeAllocResponse(((PdConnection.Message) alloc.receive()).body());
            assertEquals(List.of(), answer.alreadySentIndexes(), answer.toString());
            return answer.remoteIndexes();
        }
    }

    private static byte write(PdConnection data, long slot, MemorySegment payload) throws IOException {
        data.sendChunk(slot, payload);
        return ((PdConnection.Ack) data.receive()).status();
    }

    @Test
    void aRepeatedAnUnknownAndAWronglySizedWriteAreRefusedAndTheConnectionStaysInStep() throws Exception {
        int[] tokens = tokens(2 * CHUNK, 201);
        try (Arena arena = Arena.ofConfined(); LMCacheEngine decoder = decoder(1 << 20);
             PdReceiveServer server = PdReceiveServer.start(decoder)) {
            PreparedRequest r = decoder.prepare(tokens, Map.of());
            List<Long> slots = room(server, r.chunks());
            assertEquals(2, slots.size());
            PlanarKv kv = new PlanarKv(arena, MODEL, 2 * CHUNK, 202);
            PlanarKv other = new PlanarKv(arena, MODEL, 2 * CHUNK, 203);
            MemorySegment first = arena.allocate(CHUNK_BYTES, 64);
            MemorySegment second = arena.allocate(CHUNK_BYTES, 64);
            MemorySegment replacement = arena.allocate(CHUNK_BYTES, 64);
            kv.gather(0, CHUNK, first);
            kv.gather(CHUNK, 2 * CHUNK, second);
            other.gather(0, CHUNK, replacement);
            long never = slots.get(1) + 1_000;
            try (PdConnection data = PdConnection.connect("127.0.0.1", server.initPort(), KEY, TIMEOUT, 1 << 20)) {
                assertEquals(PdConnection.OK, write(data, slots.get(0), first));
                assertEquals(PdConnection.REFUSED, write(data, slots.get(0), replacement), "a slot is written once");
                assertEquals(PdConnection.REFUSED, write(data, never, replacement), "a slot never given");
                assertEquals(PdConnection.REFUSED, write(data, slots.get(1), second.asSlice(0, CHUNK_BYTES - 4)),
                        "a payload of another size than the room");
                assertEquals(PdConnection.OK, write(data, slots.get(1), second), "still in step after three refusals");
            }
            PdBackend.Stats s = tier(decoder).stats();
            assertEquals(3, s.lateWrites(), s.toString());
            assertEquals(2, s.landedChunks(), s.toString());
            assertEquals(2, server.stats().writes());
            assertEquals(0, server.stats().protocolErrors());
            PreparedRequest again = decoder.prepare(tokens, Map.of());
            assertEquals(2 * CHUNK, decoder.lookup(again, "r"));
            PlanarKv out = new PlanarKv(arena, MODEL, 2 * CHUNK, 0);
            decoder.retrieve(again, out, "r");
            assertArrayEquals(kv.bytes(2 * CHUNK), out.bytes(2 * CHUNK), "the first write's bytes, not the replacement's");
        }
    }

    @Test
    void aWriteIntoAnExpiredSlotIsRefusedAndNothingOfItIsServed() throws Exception {
        int[] tokens = tokens(CHUNK, 204);
        try (Arena arena = Arena.ofConfined(); LMCacheEngine decoder = decoder(1 << 20);
             PdReceiveServer server = PdReceiveServer.start(decoder)) {
            List<Long> slots = room(server, decoder.prepare(tokens, Map.of()).chunks());
            long until = System.nanoTime() + 4 * TIMEOUT.toNanos();
            while (tier(decoder).stats().expiredPending() == 0 && System.nanoTime() < until) {
                Thread.sleep(20);
            }
            assertEquals(1, tier(decoder).stats().expiredPending(), "the room waited its timeout and was freed");
            MemorySegment payload = arena.allocate(CHUNK_BYTES, 64);
            new PlanarKv(arena, MODEL, CHUNK, 205).gather(0, CHUNK, payload);
            try (PdConnection data = PdConnection.connect("127.0.0.1", server.initPort(), KEY, TIMEOUT, 1 << 20)) {
                assertEquals(PdConnection.REFUSED, write(data, slots.get(0), payload));
            }
            assertEquals(1, tier(decoder).stats().lateWrites());
            assertEquals(0, tier(decoder).stats().heldChunks());
            assertEquals(0, decoder.lookup(decoder.prepare(tokens, Map.of()), "x"), "a late write is never served");
            decoder.lookupUnpin("x");
        }
    }
}
