package lmcache4j.server.p2p;

import static lmcache4j.server.p2p.P2pEngines.TOKENS;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.net.URI;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutionException;

import lmcache4j.engine.LMCacheEngine;
import lmcache4j.engine.PreparedRequest;
import lmcache4j.engine.connector.PagedKvCache;
import lmcache4j.engine.key.CacheKey;
import lmcache4j.engine.p2p.P2pBackend;
import lmcache4j.engine.p2p.ProbingPeerLocator;
import lmcache4j.engine.remote.RemoteMetadata;
import lmcache4j.engine.remote.lm.LmConnector;
import lmcache4j.server.lm.LmCacheServer;
import lmcache4j.server.lm.LmChunkStore;
import lmcache4j.server.lm.LmServerLimits;
import org.junit.jupiter.api.Test;

/**
 * Two engines in one JVM: B misses locally, finds A through the locator and reads A's memory over
 * A's transfer server. Each engine's close checks its allocator for leaks, so a test that leaks
 * fails there.
 */
class P2pTwoEnginesTest {
    private static final Optional<String> TOKEN = P2pEngines.TOKEN;

    @Test
    void aPromptStoredInAIsServedToBFromAsMemoryByteForByte() throws Exception {
        int[] tokens = P2pEngines.tokens(1);
        long[] slots = P2pEngines.slots();
        try (Arena arena = Arena.ofShared();
             ProbingPeerLocator nobody = new ProbingPeerLocator(Map.of(), TOKEN, Duration.ofSeconds(2));
             LMCacheEngine a = P2pEngines.engine(P2pEngines.config(2_000), nobody, "A");
             P2pTransferServer served = P2pTransferServer.start(a, "127.0.0.1", 0, TOKEN, LmServerLimits.defaults());
             ProbingPeerLocator toA = new ProbingPeerLocator(Map.of("A", served.peerInitUrl()), TOKEN, Duration.ofSeconds(2));
             LMCacheEngine b = P2pEngines.engine(P2pEngines.config(2_000), toA, "B")) {
            PagedKvCache kv = P2pEngines.cache(arena);
            P2pEngines.fill(kv, tokens, slots);
            a.store(tokens, null, kv, slots, Map.of());

            assertEquals(TOKENS, b.lookup(tokens, Map.of(), null), "B's lookup sees A's chunks through the P2P tier");
            PagedKvCache target = P2pEngines.cache(arena);
            boolean[] loaded = b.retrieve(tokens, null, target, slots, Map.of(), null);
            assertTrue(loaded[0] && loaded[TOKENS - 1], "every token retrieved");
            assertEquals(-1, P2pEngines.firstDifferentLayer(kv, target), "B's KV equals what A stored, byte for byte");

            P2pBackend.Stats stats = P2pEngines.p2pTier(b).stats();
            int chunks = TOKENS / P2pEngines.CHUNK;
            assertEquals(chunks, stats.hits(), "each chunk fetched once, verified");
            assertEquals(0, stats.rejected());
            assertEquals(chunks, served.served().chunks(), "A served them from its tiers");
            // Written back into B's CPU tier: a second retrieve needs no peer.
            b.retrieve(tokens, null, P2pEngines.cache(arena), slots, Map.of(), null);
            assertEquals(chunks, P2pEngines.p2pTier(b).stats().hits());
        }
    }

    @Test
    void aChunkOnlyOnAsDiskIsServedToo(@org.junit.jupiter.api.io.TempDir java.nio.file.Path disk) throws Exception {
        int[] tokens = P2pEngines.tokens(4);
        long[] slots = P2pEngines.slots();
        lmcache4j.engine.config.LMCacheEngineConfig withDisk = lmcache4j.engine.config.ConfigLoader.builder()
                .environment(Map.of()).set("chunk_size", P2pEngines.CHUNK)
                .set("max_local_cpu_size", 8 * P2pEngines.MODEL.chunkBytes(P2pEngines.CHUNK) / (double) (1L << 30))
                .set("hash_seed", "0").set("enable_p2p", true).set("p2p_host", "127.0.0.1")
                .set("p2p_init_ports", java.util.List.of(0)).set("local_disk", disk.toString())
                .set("max_local_disk_size", 0.01).set("extra_config", Map.of("p2p_token", P2pEngines.SECRET)).build();
        try (Arena arena = Arena.ofShared();
             ProbingPeerLocator nobody = new ProbingPeerLocator(Map.of(), P2pEngines.TOKEN, Duration.ofSeconds(2));
             LMCacheEngine a = P2pEngines.engine(withDisk, nobody, "A");
             P2pTransferServer served = P2pTransferServer.start(a, "127.0.0.1", 0, P2pEngines.TOKEN, LmServerLimits.defaults());
             ProbingPeerLocator toA = new ProbingPeerLocator(Map.of("A", served.peerInitUrl()), P2pEngines.TOKEN,
                     Duration.ofSeconds(2));
             LMCacheEngine b = P2pEngines.engine(P2pEngines.config(2_000), toA, "B")) {
            PagedKvCache kv = P2pEngines.cache(arena);
            P2pEngines.fill(kv, tokens, slots);
            a.store(tokens, null, kv, slots, Map.of());
            ((lmcache4j.engine.storage.disk.LocalDiskBackend) a.storage().tier(
                    lmcache4j.engine.storage.disk.LocalDiskBackend.NAME).orElseThrow()).awaitPuts();
            for (var chunk : a.prepare(tokens, Map.of()).chunks()) {
                assertTrue(a.storage().cpu().remove(chunk.key()), "out of A's CPU tier: only its disk holds it");
            }
            PagedKvCache target = P2pEngines.cache(arena);
            assertTrue(b.retrieve(tokens, null, target, slots, Map.of(), null)[TOKENS - 1]);
            assertEquals(-1, P2pEngines.firstDifferentLayer(kv, target), "served from A's disk, byte for byte");
            assertEquals(TOKENS / P2pEngines.CHUNK, served.served().chunks());
        }
    }

    @Test
    void peersCannotWriteAndAWrongTokenReadsNothing() throws Exception {
        int[] tokens = P2pEngines.tokens(2);
        long[] slots = P2pEngines.slots();
        try (Arena arena = Arena.ofShared();
             ProbingPeerLocator nobody = new ProbingPeerLocator(Map.of(), TOKEN, Duration.ofSeconds(2));
             LMCacheEngine a = P2pEngines.engine(P2pEngines.config(2_000), nobody, "A");
             P2pTransferServer served = P2pTransferServer.start(a, "127.0.0.1", 0, TOKEN, LmServerLimits.defaults())) {
            PagedKvCache kv = P2pEngines.cache(arena);
            P2pEngines.fill(kv, tokens, slots);
            a.store(tokens, null, kv, slots, Map.of());
            PreparedRequest request = a.prepare(tokens, Map.of());
            CacheKey first = request.chunks().getFirst().key();
            CacheKey absent = a.prepare(P2pEngines.tokens(99), Map.of()).chunks().getFirst().key();
            try (LmConnector peer = LmConnector.connect(URI.create("lm://" + served.peerInitUrl() + "?token=" + P2pEngines.SECRET));
                 Arena scratch = Arena.ofShared()) {
                assertTrue(peer.exists(first).get());
                MemorySegment junk = scratch.allocate(64);
                RemoteMetadata meta = new RemoteMetadata(64, lmcache4j.allocator.MemoryFormat.BINARY,
                        Optional.of(lmcache4j.allocator.DType.UINT8), lmcache4j.allocator.TensorShape.of(64, 0, 0, 0));
                ExecutionException refused = assertThrows(ExecutionException.class, () -> peer.put(absent, meta, junk).get());
                assertTrue(refused.getCause().getMessage().contains("did not store"), refused.getCause().getMessage());
                assertFalse(peer.exists(absent).get(), "the refused PUT stored nothing");
                assertFalse(peer.remove(first).get(), "peers cannot remove");
                assertTrue(peer.exists(first).get(), "A still holds its chunk");
            }
            assertEquals(1, served.stats().refusedPuts());

            try (ProbingPeerLocator wrongToken = new ProbingPeerLocator(Map.of("A", served.peerInitUrl()),
                    Optional.of("a-guess-of-the-token"), Duration.ofSeconds(2));
                 LMCacheEngine b = P2pEngines.engine(P2pEngines.config("a-guess-of-the-token", 2_000), wrongToken, "B")) {
                assertEquals(0, b.lookup(tokens, Map.of(), null));
                assertFalse(b.retrieve(tokens, null, P2pEngines.cache(arena), slots, Map.of(), null)[0]);
            }
            // B stopped at A's proof, which does not check out under B's token: B never sent one of its own.
            assertEquals(0, served.stats().authFailures());
        }
    }

    @Test
    void aChunkCorruptedOnTheWayIsAMissNeverKv() throws Exception {
        int[] tokens = P2pEngines.tokens(3);
        long[] slots = P2pEngines.slots();
        try (Arena arena = Arena.ofShared();
             ProbingPeerLocator nobody = new ProbingPeerLocator(Map.of(), P2pEngines.TOKEN, Duration.ofSeconds(2));
             LMCacheEngine a = P2pEngines.engine(P2pEngines.config(2_000), nobody, "A");
             Arena corruptCopies = Arena.ofShared()) {
            PagedKvCache kv = P2pEngines.cache(arena);
            P2pEngines.fill(kv, tokens, slots);
            a.store(tokens, null, kv, slots, Map.of());
            EngineTierStore honest = new EngineTierStore(java.util.List.of(a.storage().cpu()));
            try (LmCacheServer flipping = LmCacheServer.startOver(InetAddress.getLoopbackAddress(), 0,
                    new FlippingStore(honest, corruptCopies), P2pEngines.TOKEN, 1 << 16, LmServerLimits.defaults());
                 ProbingPeerLocator toA = new ProbingPeerLocator(Map.of("A", "127.0.0.1:" + flipping.port()), P2pEngines.TOKEN,
                         Duration.ofSeconds(2));
                 LMCacheEngine b = P2pEngines.engine(P2pEngines.config(2_000), toA, "B")) {
                PagedKvCache target = P2pEngines.cache(arena);
                assertFalse(b.retrieve(tokens, null, target, slots, Map.of(), null)[0], "a corrupt chunk is never loaded");
                assertTrue(P2pEngines.p2pTier(b).stats().rejected() >= 1, "the CRC32C mismatch is counted");
                assertEquals(0, P2pEngines.p2pTier(b).stats().hits());
            }
        }
    }

    /**
     * A peer whose chunks arrive with one bit flipped and the CRC32C of the true bytes (a copy: the
     * engine's own memory stays intact).
     */
    private record FlippingStore(LmChunkStore inner, Arena copies) implements LmChunkStore {
        @Override
        public boolean exists(String key) {
            return inner.exists(key);
        }

        @Override
        public Optional<Lease> lease(String key) {
            Optional<Lease> l = inner.lease(key);
            if (l.isEmpty()) {
                return l;
            }
            try (Lease real = l.get()) {
                MemorySegment copy = copies.allocate(real.length(), 64);
                long at = 0;
                for (ByteBuffer b : real.payload()) {
                    MemorySegment.copy(MemorySegment.ofBuffer(b), 0, copy, at, b.remaining());
                    at += b.remaining();
                }
                copy.set(java.lang.foreign.ValueLayout.JAVA_BYTE, copy.byteSize() / 2,
                        (byte) (copy.get(java.lang.foreign.ValueLayout.JAVA_BYTE, copy.byteSize() / 2) ^ 1));
                byte[] metadata = real.metadata();
                int crcOfTheTrueBytes = real.replyLocation();
                return Optional.of(new Lease() {
                    @Override
                    public int replyLocation() {
                        return crcOfTheTrueBytes;
                    }

                    @Override
                    public byte[] metadata() {
                        return metadata;
                    }

                    @Override
                    public ByteBuffer[] payload() {
                        return new ByteBuffer[] {copy.asByteBuffer()};
                    }

                    @Override
                    public long length() {
                        return copy.byteSize();
                    }

                    @Override
                    public void close() {
                    }
                });
            }
        }

        @Override
        public boolean put(String key, byte[] metadata, int length, PayloadSource source) throws java.io.IOException {
            return inner.put(key, metadata, length, source);
        }

        @Override
        public boolean remove(String key) {
            return inner.remove(key);
        }

        @Override
        public Occupancy occupancy() {
            return inner.occupancy();
        }

        @Override
        public void close() {
        }
    }

}
