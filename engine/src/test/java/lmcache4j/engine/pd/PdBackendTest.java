package lmcache4j.engine.pd;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import lmcache4j.allocator.DType;
import lmcache4j.allocator.MemoryFormat;
import lmcache4j.allocator.MemoryObj;
import lmcache4j.allocator.tensor.TensorMemoryAllocator;
import lmcache4j.engine.ModelMetadata;
import lmcache4j.engine.config.PdSettings;
import lmcache4j.engine.key.CacheEngineKey;
import lmcache4j.engine.key.ChunkHash;
import lmcache4j.engine.pd.wire.AllocRequest;
import lmcache4j.engine.pd.wire.AllocResponse;
import lmcache4j.engine.storage.MemoryProvider;

/**
 * The decoder's PD tier on a test clock, over strict allocators (every object its own arena, so a
 * use after free throws): room is given until the buffer is full and refused after, never waited
 * for; only landed chunks are seen; a retrieve consumes its claim and frees the room; room never
 * written and chunks never read are freed on time, pinned ones are not; another model's request is
 * refused whole.
 */
class PdBackendTest {
    private static final int CHUNK = 16;
    private static final ModelMetadata MODEL = new ModelMetadata("pd/model", 1, 0, DType.FLOAT32, 2, 2, 4, false);
    private static final long CHUNK_BYTES = MODEL.chunkBytes(CHUNK); // 2 × 2 × 16 × 8 × 4 = 2 KiB
    private static final Duration TIMEOUT = Duration.ofSeconds(5);
    private static final Duration TTL = Duration.ofSeconds(60);

    private final AtomicLong now = new AtomicLong(1_000_000_000L);
    private final TensorMemoryAllocator cpu = TensorMemoryAllocator.strict("cpu", 64 * CHUNK_BYTES, 4096);
    private PdBackend tier = tier(4);

    private PdBackend tier(int chunks) {
        return tier(chunks * 4096L, 4096);
    }

    private PdBackend tier(long bytes, long alignment) {
        return new PdBackend(TensorMemoryAllocator.strict(PdBackend.NAME, bytes, alignment), MODEL, CHUNK,
                (shape, dtype, format, mode) -> cpu.allocate(shape, dtype, format), TIMEOUT, TTL, now::get, Duration.ZERO);
    }

    @AfterEach
    void close() {
        tier.close(); // fails on a leaked object
        cpu.close();
    }

    private static String key(int i) {
        byte[] h = new byte[32];
        h[0] = (byte) i;
        h[31] = 7;
        return new CacheEngineKey(MODEL.modelName(), 1, 0, ChunkHash.of(h), DType.FLOAT32).toKeyString();
    }

    private static List<String> keys(int from, int to) {
        List<String> out = new ArrayList<>();
        for (int i = from; i < to; i++) {
            out.add(key(i));
        }
        return out;
    }

    private static AllocRequest request(List<String> keys, int lastTokens) {
        return new AllocRequest(keys, MemoryFormat.KV_2LTD.code(), List.of(2, 2, CHUNK, 8), "float", lastTokens);
    }

    /** Writes {@code fill} into slot {@code slot} and lands it. */
    private void land(long slot, byte fill) {
        PdBackend.Landing l = tier.beginWrite(slot, CHUNK_BYTES).orElseThrow();
        l.segment().fill(fill);
        l.landed();
    }

    @Test
    void aLandedChunkIsRetrievedOnceAndItsRoomFreed() {
        AllocResponse a = tier.allocate(request(keys(0, 2), CHUNK));
        assertEquals(List.of(), a.alreadySentIndexes());
        assertEquals(2, a.remoteIndexes().size());
        CacheEngineKey k0 = CacheEngineKey.parse(key(0));
        assertFalse(tier.contains(k0, false), "allocated but not written: not seen");
        land(a.remoteIndexes().get(0), (byte) 5);
        assertTrue(tier.contains(k0, true), "landed: seen (and pinned)");
        MemoryObj got = tier.getBlocking(k0).orElseThrow();
        assertEquals(5, got.segment().get(ValueLayout.JAVA_BYTE, CHUNK_BYTES - 1));
        assertEquals("cpu", got.ownerName(), "a copy in the CPU tier's memory");
        got.release();
        assertFalse(tier.contains(k0, false), "its one claim consumed: gone");
        assertFalse(tier.unpin(k0), "the lookup's pin went with it");
        assertEquals(1, tier.stats().heldChunks(), "the other chunk's room is still waiting for its write");
        assertEquals(1, tier.stats().servedChunks());
    }

    @Test
    void aFullBufferRefusesTheChunkAndEveryLaterOneAtOnce() {
        AllocResponse a = tier.allocate(request(keys(0, 6), 3));
        assertEquals(List.of(1L, 2L, 3L, 4L, AllocResponse.REFUSED, AllocResponse.REFUSED), a.remoteIndexes());
        assertEquals(2, tier.stats().refusedChunks());
        assertEquals("", a.error());
        // A second request for the same prefix: the first four are being sent already, the rest still refused.
        AllocResponse b = tier.allocate(request(keys(0, 6), 3));
        assertEquals(List.of(0, 1, 2, 3), b.alreadySentIndexes());
        assertEquals(List.of(AllocResponse.REFUSED, AllocResponse.REFUSED), b.remoteIndexes());
    }

    @Test
    void afterTheFirstRefusalAChunkThatWouldStillFitIsRefusedToo() {
        tier.close();
        // Four whole chunks and 512 bytes more: the partial last chunk (3 tokens, 384 bytes) would fit after the
        // fifth is refused, but a retrieve stops at the first missing chunk, so that room would serve nothing.
        tier = tier(4 * CHUNK_BYTES + 512, 128);
        AllocResponse a = tier.allocate(request(keys(0, 6), 3));
        assertEquals(List.of(1L, 2L, 3L, 4L, AllocResponse.REFUSED, AllocResponse.REFUSED), a.remoteIndexes());
        assertEquals(4, tier.stats().heldChunks());
    }

    @Test
    void theLastChunkMayBePartialAndAWriteOfAnotherSizeIsLate() {
        AllocResponse a = tier.allocate(request(keys(0, 2), 3));
        long partial = a.remoteIndexes().get(1);
        assertTrue(tier.beginWrite(partial, CHUNK_BYTES).isEmpty(), "a full chunk's bytes into a 3-token room");
        assertEquals(1, tier.stats().lateWrites());
        PdBackend.Landing l = tier.beginWrite(partial, CHUNK_BYTES * 3 / CHUNK).orElseThrow();
        l.landed();
        assertTrue(tier.beginWrite(partial, CHUNK_BYTES * 3 / CHUNK).isEmpty(), "written once only");
        assertEquals(3, tier.getBlocking(CacheEngineKey.parse(key(1))).map(o -> {
            int t = o.tokenCount();
            o.release();
            return t;
        }).orElseThrow());
    }

    @Test
    void roomNeverWrittenIsFreedAfterTheTimeoutAndALateWriteRefused() {
        AllocResponse a = tier.allocate(request(keys(0, 4), CHUNK));
        now.addAndGet(TIMEOUT.toNanos() - 1);
        tier.sweepNow();
        assertEquals(4, tier.stats().heldChunks(), "not yet");
        now.addAndGet(2);
        tier.sweepNow();
        assertEquals(0, tier.stats().heldChunks());
        assertEquals(4, tier.stats().expiredPending());
        assertEquals(0, tier.stats().usedBytes());
        assertTrue(tier.beginWrite(a.remoteIndexes().get(0), CHUNK_BYTES).isEmpty(), "a slot is never reused");
    }

    @Test
    void aChunkNoRetrieveReadIsFreedAfterItsTtlUnlessPinned() {
        AllocResponse a = tier.allocate(request(keys(0, 2), CHUNK));
        land(a.remoteIndexes().get(0), (byte) 1);
        land(a.remoteIndexes().get(1), (byte) 2);
        CacheEngineKey k1 = CacheEngineKey.parse(key(1));
        assertTrue(tier.contains(k1, true));
        now.addAndGet(TTL.toNanos() + 1);
        tier.sweepNow();
        assertEquals(1, tier.stats().expiredUnclaimed(), "the unpinned one");
        assertTrue(tier.contains(k1, false), "the pinned one stays while a lookup holds it");
        assertTrue(tier.unpin(k1));
        tier.sweepNow();
        assertEquals(0, tier.stats().heldChunks());
    }

    @Test
    void aChunkTwoRequestsClaimedServesBoth() {
        AllocResponse a = tier.allocate(request(keys(0, 1), CHUNK));
        land(a.remoteIndexes().get(0), (byte) 3);
        assertEquals(List.of(0), tier.allocate(request(keys(0, 1), CHUNK)).alreadySentIndexes());
        CacheEngineKey k = CacheEngineKey.parse(key(0));
        tier.getBlocking(k).orElseThrow().release();
        assertTrue(tier.contains(k, false), "the second request's claim keeps it");
        tier.getBlocking(k).orElseThrow().release();
        assertFalse(tier.contains(k, false));
    }

    @Test
    void aDiscardedWriteIsNeverSeen() {
        AllocResponse a = tier.allocate(request(keys(0, 1), CHUNK));
        PdBackend.Landing l = tier.beginWrite(a.remoteIndexes().get(0), CHUNK_BYTES).orElseThrow();
        l.segment().fill((byte) 9);
        l.discard(true);
        l.landed(); // too late: the write is over
        assertFalse(tier.contains(CacheEngineKey.parse(key(0)), false));
        assertEquals(1, tier.stats().tagFailures());
        assertEquals(0, tier.stats().usedBytes());
    }

    @Test
    void anotherModelsRequestIsRefusedWhole() {
        assertTrue(tier.allocate(new AllocRequest(keys(0, 1), MemoryFormat.KV_2LTD.code(), List.of(2, 3, CHUNK, 8), "float",
                CHUNK)).error().contains("chunk shape [2, 3, 16, 8]"));
        assertTrue(tier.allocate(new AllocRequest(keys(0, 1), MemoryFormat.KV_2LTD.code(), List.of(2, 2, CHUNK, 8), "half",
                CHUNK)).error().contains("dtype half"));
        String otherModel = new CacheEngineKey("other/model", 1, 0, ChunkHash.of(new byte[32]), DType.FLOAT32).toKeyString();
        assertTrue(tier.allocate(request(List.of(otherModel), CHUNK)).error().contains("not of this decoder's model"));
        assertTrue(tier.allocate(request(List.of("not a key"), CHUNK)).error().contains("does not parse"));
        assertTrue(tier.allocate(request(keys(0, 1), CHUNK + 1)).error().contains("last_chunk_toks"));
        assertEquals(5, tier.stats().refusedRequests());
        assertEquals(0, tier.stats().allocatedChunks());
    }

    @Test
    void closingWithRoomHeldReleasesItAll() {
        AllocResponse a = tier.allocate(request(keys(0, 3), CHUNK));
        land(a.remoteIndexes().get(0), (byte) 1);
        Optional<PdBackend.Landing> writing = tier.beginWrite(a.remoteIndexes().get(1), CHUNK_BYTES);
        assertTrue(writing.isPresent());
        tier.close(); // the writing one too, with a warning; the strict buffer's leak check passes
        writing.get().landed(); // the write ends after the close: nothing to do, no double free
        tier = tier(1);
    }

    @Test
    void roomIsFreedAtItsDeadlineExactlyByTheNextAllocationWithNoSweepThread() {
        AllocResponse a = tier.allocate(request(keys(0, 4), CHUNK)); // the whole buffer
        assertEquals(4, a.remoteIndexes().size());
        now.addAndGet(TIMEOUT.toNanos() - 1);
        assertEquals(List.of(AllocResponse.REFUSED), tier.allocate(request(keys(4, 5), CHUNK)).remoteIndexes(),
                "one nanosecond early: still held");
        now.addAndGet(1); // the deadline itself: the room is no longer the sender's
        AllocResponse b = tier.allocate(request(keys(5, 9), CHUNK));
        assertEquals(4, b.remoteIndexes().stream().filter(i -> i != AllocResponse.REFUSED).count(), b.toString());
        assertEquals(4, tier.stats().expiredPending());
    }

    @Test
    void aLandedChunkAskedForAgainHasItsTtlExtendedFromThatRequest() {
        AllocResponse a = tier.allocate(request(keys(0, 1), CHUNK));
        land(a.remoteIndexes().get(0), (byte) 3);
        now.addAndGet(TTL.toNanos() - 1_000);
        assertEquals(List.of(0), tier.allocate(request(keys(0, 1), CHUNK)).alreadySentIndexes());
        now.addAndGet(2_000); // past the first TTL, within the second
        tier.sweepNow();
        CacheEngineKey k0 = CacheEngineKey.parse(key(0));
        assertTrue(tier.contains(k0, false), "the second request's claim kept it");
        now.addAndGet(TTL.toNanos());
        tier.sweepNow();
        assertFalse(tier.contains(k0, false), "and its TTL ran out in turn");
        assertEquals(1, tier.stats().expiredUnclaimed());
    }

    @Test
    void theLastChunkHoldsOneTokenToAWholeChunk() {
        assertEquals("", tier.allocate(request(keys(0, 1), 1)).error());
        assertEquals("", tier.allocate(request(keys(1, 2), CHUNK)).error());
        assertTrue(tier.allocate(request(keys(2, 3), 0)).error().contains("last_chunk_toks 0"));
        assertTrue(tier.allocate(request(keys(2, 3), CHUNK + 1)).error().contains("last_chunk_toks " + (CHUNK + 1)));
        assertEquals(2, tier.stats().refusedRequests());
    }

    @Test
    void onlyALandedChunkIsSeenAndEachPinIsTakenBackOnce() {
        AllocResponse a = tier.allocate(request(keys(0, 1), CHUNK));
        CacheEngineKey k0 = CacheEngineKey.parse(key(0));
        assertFalse(tier.contains(k0, true), "room waiting for its write");
        assertFalse(tier.unpin(k0), "so nothing was pinned");
        land(a.remoteIndexes().get(0), (byte) 9);
        assertTrue(tier.contains(k0, false));
        assertFalse(tier.unpin(k0), "a lookup that did not pin has nothing to give back");
        assertTrue(tier.contains(k0, true));
        assertTrue(tier.contains(k0, true));
        assertTrue(tier.unpin(k0));
        assertTrue(tier.unpin(k0));
        assertFalse(tier.unpin(k0), "two pins, two unpins");
        assertFalse(tier.contains(CacheEngineKey.parse(key(1)), false), "a key never asked for");
    }

    @Test
    void everyOperationLeavesTheTierFreeForTheNextThread() {
        AllocResponse a = tier.allocate(request(keys(0, 3), CHUNK));
        land(a.remoteIndexes().get(0), (byte) 1);
        land(a.remoteIndexes().get(1), (byte) 2);
        CacheEngineKey k0 = CacheEngineKey.parse(key(0));
        CacheEngineKey k1 = CacheEngineKey.parse(key(1));
        tier.contains(k0, true);
        tier.unpin(k0);
        tier.getBlocking(k0).orElseThrow().release();
        tier.getBlocking(CacheEngineKey.parse(key(2))); // not landed: empty
        tier.remove(k1);
        tier.clear();
        tier.sweepNow();
        tier.stats();
        // every one of them let go of the tier's lock: another thread gets in at once
        assertTimeoutPreemptively(Duration.ofSeconds(5), () -> assertFalse(tier.contains(k1, false)));
        tier.close();
        assertTimeoutPreemptively(Duration.ofSeconds(5), () -> assertFalse(tier.contains(k1, false)));
    }

    /**
     * {@code clear} (what the storage manager's clear and {@code bench pd} call) frees only landed chunks no
     * lookup holds, and counts their tokens; {@code remove} frees a chunk or its room, never one whose write
     * is under way, and says whether it did.
     */
    @Test
    void clearFreesOnlyUnpinnedLandedChunksAndRemoveLeavesAWriteInProgress() {
        AllocResponse a = tier.allocate(request(keys(0, 4), 3)); // the last one of 3 tokens
        List<Long> slots = a.remoteIndexes();
        CacheEngineKey k0 = CacheEngineKey.parse(key(0));
        CacheEngineKey k1 = CacheEngineKey.parse(key(1));
        CacheEngineKey k2 = CacheEngineKey.parse(key(2));
        CacheEngineKey k3 = CacheEngineKey.parse(key(3));
        land(slots.get(0), (byte) 1);
        land(slots.get(1), (byte) 2);
        PdBackend.Landing partial = tier.beginWrite(slots.get(3), tier.metadata().chunkBytes(3)).orElseThrow();
        partial.landed();
        assertTrue(tier.contains(k1, true), "pinned by a lookup");
        PdBackend.Landing writing = tier.beginWrite(slots.get(2), CHUNK_BYTES).orElseThrow();

        assertEquals(CHUNK + 3, tier.clear(), "the two unpinned landed chunks' tokens");
        assertFalse(tier.contains(k0, false));
        assertFalse(tier.contains(k3, false));
        assertTrue(tier.contains(k1, false), "the pinned one stays");
        assertEquals(2, tier.stats().heldChunks(), "the pinned one and the one being written");
        assertEquals(0, tier.clear(), "nothing more to clear");

        assertFalse(tier.remove(k2), "a chunk being written stays until its write ends");
        assertTrue(tier.unpin(k1));
        assertTrue(tier.remove(k1));
        assertFalse(tier.contains(k1, false));
        assertFalse(tier.remove(k1), "removed once");
        assertFalse(tier.remove(CacheEngineKey.parse(key(9))), "a key never asked for");
        assertEquals(1, tier.stats().heldChunks());

        writing.landed();
        assertTrue(tier.contains(k2, false), "the write ended and landed");
        AllocResponse b = tier.allocate(request(keys(4, 5), CHUNK));
        assertTrue(tier.remove(CacheEngineKey.parse(key(4))), "room waiting for its write");
        assertTrue(tier.beginWrite(b.remoteIndexes().getFirst(), CHUNK_BYTES).isEmpty(), "its write is late now");
        assertTrue(tier.remove(k2));
        assertEquals(0, tier.stats().heldChunks());
        assertEquals(0, tier.stats().usedBytes(), "every room given back to the buffer");
    }

    /** A decoder's buffer must hold one whole chunk: exactly one is enough; less than one is refused, naming both sizes. */
    @Test
    void aBufferOfExactlyOneChunkIsEnoughAndOneThatHoldsNoChunkIsRefused() {
        ModelMetadata mib = new ModelMetadata("pd/mib", 1, 0, DType.FLOAT32, 8, 1, 64, false); // 2 × 8 × 256 × 64 × 4 = 1 MiB
        ModelMetadata more = new ModelMetadata("pd/more", 1, 0, DType.FLOAT32, 9, 1, 64, false);
        long oneMib = PdSettings.MIN_BUFFER_BYTES;
        assertEquals(oneMib, mib.chunkBytes(256));
        PdSettings settings = new PdSettings(PdSettings.Role.RECEIVER, oneMib, Optional.of("127.0.0.1"), List.of(0),
                List.of(0), Optional.empty(), java.util.OptionalInt.empty(), Optional.of("t"), TIMEOUT, TTL);
        MemoryProvider provider = (shape, dtype, format, mode) -> cpu.allocate(shape, dtype, format);
        try (PdBackend one = PdBackend.create(settings, mib, 256, provider)) {
            assertEquals(oneMib, one.stats().capacityBytes());
        }
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> PdBackend.create(settings, more, 256, provider));
        assertTrue(e.getMessage().contains("pd_buffer_size " + oneMib + " holds no full chunk of " + more.chunkBytes(256)),
                e.getMessage());
    }

    @Test
    void aClosedTierRefusesRoomAndHasClosedItsBuffer() {
        TensorMemoryAllocator buffer = TensorMemoryAllocator.strict(PdBackend.NAME, 4 * 4096L, 4096);
        PdBackend t = new PdBackend(buffer, MODEL, CHUNK, (shape, dtype, format, mode) -> cpu.allocate(shape, dtype, format),
                TIMEOUT, TTL, now::get, Duration.ZERO);
        t.allocate(request(keys(0, 1), CHUNK));
        t.close();
        t.close(); // twice is fine
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> t.allocate(request(keys(1, 2), CHUNK)));
        assertTrue(e.getMessage().contains("closed"), e.getMessage());
        assertThrows(IllegalStateException.class, () -> buffer.allocate(lmcache4j.allocator.TensorShape.of(2, 2, CHUNK, 8),
                DType.FLOAT32, MemoryFormat.KV_2LTD), "the buffer closed with the tier");
    }
}
