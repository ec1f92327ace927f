package lmcache4j.bench.trace;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The replay through the engine's tiers: metadata-only and bytes modes give the same hits request by
 * request (the bytes mode reads back and checks every hit); no policy beats Belady or the infinite
 * cache; a disk tier below the CPU tier serves hits the CPU tier lost; two chunks per block hit as
 * one chunk per block does under a prefix rule.
 */
class ReplayTest {
    /** A prefix of the bundled trace: enough traffic for evictions at a few hundred blocks. */
    static final Trace PREFIX = TraceFile.bundled().prefix(800);

    @TempDir
    Path dir;

    /**
     * At 1,500 chunks, where this prefix's hits still grow with capacity (at a few hundred they are
     * flat, and a mode that lost a tenth of its capacity would go unseen) and KV_ADAPTIVE's tuner acts.
     */
    @Test
    void metadataAndBytesModesGiveTheSameHits() {
        int capacity = 1500;
        for (String policy : List.of("LRU", "KV_ADAPTIVE")) {
            List<EngineReplay.Hits> metadata;
            List<EngineReplay.Hits> bytes;
            long checked;
            try (EngineReplay r = new EngineReplay(PREFIX, EngineReplay.Settings.cpu(policy, capacity, 512, EngineReplay.Mode.METADATA))) {
                metadata = r.replayAll();
                r.memcheck();
            }
            try (EngineReplay r = new EngineReplay(PREFIX, EngineReplay.Settings.cpu(policy, capacity, 512, EngineReplay.Mode.BYTES))) {
                bytes = r.replayAll();
                checked = r.checkedChunks();
                r.memcheck();
            }
            assertEquals(metadata, bytes, policy + ": every request's hits agree");
            long hits = bytes.stream().mapToLong(EngineReplay.Hits::chunks).sum();
            assertTrue(hits > 600, policy + " hits " + hits);
            assertEquals(hits, checked, policy + ": every hit's bytes were read back and checked");
        }
    }

    @Test
    void noPolicyBeatsBeladyOrTheInfiniteCache() {
        ChunkTrace chunks = ChunkTrace.of(PREFIX, 512);
        long infinite = chunks.infiniteHits();
        for (int capacity : new int[]{150, 800}) {
            long belady = Belady.hits(chunks, capacity);
            assertTrue(belady <= infinite);
            for (String policy : List.of("LRU", "LFU", "FIFO", "MRU", "S3FIFO", "ARC", "KV_ADAPTIVE")) {
                long hits = TraceSweep.replay(PREFIX, EngineReplay.Settings.cpu(policy, capacity, 512,
                        EngineReplay.Mode.METADATA)).hitChunks();
                assertTrue(hits <= belady, policy + " at " + capacity + ": " + hits + " > Belady's " + belady);
                assertTrue(hits > 0, policy + " at " + capacity);
            }
        }
        assertEquals(infinite, Belady.hits(chunks, chunks.distinctChunks()), "Belady with room for everything is the infinite cache");
    }

    @Test
    void aDiskTierServesWhatTheCpuTierLost() {
        EngineReplay.Settings cpuOnly = EngineReplay.Settings.cpu("LRU", 100, 512, EngineReplay.Mode.METADATA);
        Trace small = PREFIX;
        TraceSweep.PolicyResult alone = TraceSweep.replay(small, cpuOnly);
        TraceSweep.PolicyResult withDisk = TraceSweep.replay(small, new EngineReplay.Settings("LRU", 100, 512,
                EngineReplay.Mode.METADATA, 1000, dir));
        assertTrue(withDisk.diskHitChunks() > 0, "the disk tier served nothing");
        assertTrue(withDisk.hitChunks() > alone.hitChunks(), withDisk + " vs " + alone);
        assertTrue(withDisk.hitChunks() <= LruCurve.of(small, 512).hits(1000) * 101 / 100 + 10,
                "CPU and disk together hold at most what one LRU of the disk's size holds");
    }

    @Test
    void twoChunksPerBlockHitTwiceAsManyChunks() {
        long one = TraceSweep.replay(PREFIX, EngineReplay.Settings.cpu("LRU", 200, 512, EngineReplay.Mode.METADATA)).hitChunks();
        TraceSweep.PolicyResult two = TraceSweep.replay(PREFIX, EngineReplay.Settings.cpu("LRU", 400, 256,
                EngineReplay.Mode.METADATA));
        assertEquals(2 * one, two.hitChunks(), "the same blocks, cut in two, evicted in pairs");
    }
}
