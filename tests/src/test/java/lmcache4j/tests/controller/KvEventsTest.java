package lmcache4j.tests.controller;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.math.BigInteger;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.function.Predicate;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import lmcache4j.allocator.DType;
import lmcache4j.engine.LMCacheEngine;
import lmcache4j.engine.ModelMetadata;
import lmcache4j.engine.config.ConfigLoader;
import lmcache4j.engine.connector.KvConnector;
import lmcache4j.engine.connector.PagedKvCache;
import lmcache4j.engine.connector.PagedLayout;
import lmcache4j.engine.controller.ControllerKeys;
import lmcache4j.engine.key.ChunkHasher;
import lmcache4j.engine.key.ChunkRange;
import lmcache4j.engine.key.HashAlgorithm;
import lmcache4j.tests.TestPython;

/**
 * An engine's KV events as vLLM's routers receive them: a Python subscriber (pyzmq, msgspec) decodes
 * every batch with {@code Decoder(type=KVEventBatch)} over vLLM's event classes, re-encodes it to the
 * same bytes, and asks the replay socket for everything from seq 0.
 */
class KvEventsTest {
    private static final Duration WAIT = Duration.ofSeconds(60);
    private static final int CHUNK = 256;

    @TempDir
    Path tmp;

    @Test
    @SuppressWarnings("unchecked")
    void storesAndAClearArriveAsVllmEventsWithTheChunksHashesTokensAndMedium() throws Exception {
        TestPython.require();
        int[] ports = FreePorts.take(2);
        String sub = "tcp://127.0.0.1:" + ports[0];
        String replay = "tcp://127.0.0.1:" + ports[1];
        try (ChildProcess subscriber = ChildProcess.start("kv-subscriber", TestPython.script("kv_events_subscriber.py",
                List.of("--bind", sub, "--replay", replay, "--topic", "kv@test", "--seconds", "120")), tmp, Map.of())) {
            subscriber.awaitEvent("ready", WAIT);
            ModelMetadata model = new ModelMetadata("kv-events/model", 1, 0, DType.BFLOAT16, 2, 2, 64, false);
            int[] tokens = new Random(3).ints(3 * CHUNK + 40, 0, 128_000).toArray();
            try (Arena arena = Arena.ofShared();
                 LMCacheEngine engine = LMCacheEngine.create(ConfigLoader.builder().environment(Map.of())
                         .set("chunk_size", CHUNK).set("max_local_cpu_size", 0.05).set("hash_seed", "0")
                         .set("local_disk", tmp.resolve("disk").toString()).set("max_local_disk_size", 0.05)
                         .set("kv_events_endpoint", sub).set("kv_events_replay_endpoint", replay)
                         .set("kv_events_topic", "kv@test").build(), model, KvConnector.host(), List.of())) {
                long[] slots = new long[tokens.length];
                Arrays.setAll(slots, i -> i);
                PagedKvCache kv = cache(arena, model, 64, 16);
                kv.layers().forEach(layer -> layer.fill((byte) 0x5a));
                assertEquals(3 * CHUNK, engine.store(tokens, null, kv, slots, Map.of()));
                List<ChunkRange> chunks = engine.prepare(tokens, Map.of()).chunks();
                assertTrue(chunks.getFirst().key().chunkHash().isInteger(), "storage keys in LMCache's current form");
                // Events carry vLLM's block hash (the digest chain at block size = chunk size), not the storage key's integer.
                long[] hashes = ChunkHasher.seeded(HashAlgorithm.SHA256_CBOR, "0").chain(tokens, CHUNK, false).stream()
                        .mapToLong(ControllerKeys::vllmFold).toArray();

                // The replay socket has every batch, as a router that joined late asks for it.
                List<Map<String, Object>> stored = replayUntil(subscriber,
                        all -> stored(all, "CPU").size() >= 3 && stored(all, "DISK").size() >= 3);
                List<Map<String, Object>> cpu = stored(stored, "CPU");
                assertEquals(3, cpu.size(), cpu.toString());
                for (int i = 0; i < 3; i++) {
                    Map<String, Object> e = cpu.get(i);
                    assertEquals(List.of(hashes[i]), longs(e.get("block_hashes")), "chunk " + i + "'s vLLM-folded hash");
                    assertEquals(i == 0 ? null : hashes[i - 1], e.get("parent_block_hash") == null ? null
                            : longs(List.of(e.get("parent_block_hash"))).getFirst(), "parent of chunk " + i);
                    assertEquals(Arrays.stream(tokens, i * CHUNK, (i + 1) * CHUNK).boxed().map(Long::valueOf).toList(),
                            e.get("token_ids"));
                    assertEquals((long) CHUNK, e.get("block_size"));
                }
                assertEquals(3, stored(stored, "DISK").size(), "the disk tier's admits are events too");

                engine.clear(); // by now the subscription has long arrived: these come live
                Map<String, Object> live = subscriber.awaitEvent("batch", 1, b -> ((List<Map<String, Object>>) b.get("events"))
                        .stream().anyMatch(e -> "AllBlocksCleared".equals(e.get("type"))), WAIT);
                assertTrue(subscriber.events().stream().filter(e -> "batch".equals(e.get("event")))
                        .allMatch(b -> Boolean.TRUE.equals(b.get("same_bytes"))), "msgspec re-encodes every batch to its bytes: " + live);
                List<Map<String, Object>> all = replayUntil(subscriber,
                        events -> !events.isEmpty() && "AllBlocksCleared".equals(events.getLast().get("type")));
                List<Object> removed = new ArrayList<>();
                all.stream().filter(e -> "BlockRemoved".equals(e.get("type")) && "CPU".equals(e.get("medium")))
                        .forEach(e -> removed.addAll(longs(e.get("block_hashes"))));
                assertTrue(removed.containsAll(List.of(hashes[0], hashes[1], hashes[2])), "the clear removed every chunk: " + all);
                Map<String, Object> lastReplay = lastReplay(subscriber);
                assertEquals(true, lastReplay.get("same_payloads"), "replayed batches are the live ones, byte for byte");
                List<Object> seqs = (List<Object>) lastReplay.get("seqs");
                for (int i = 0; i < seqs.size(); i++) {
                    assertEquals((long) i, seqs.get(i), "replay from seq 0, in order: " + seqs);
                }
            }
            subscriber.send("quit");
            assertEquals(0, subscriber.awaitExit(WAIT), subscriber.output());
        }
    }

    @Test
    @SuppressWarnings("unchecked")
    void aRunningDemoEnginePublishesToASubscriber() throws Exception {
        TestPython.require();
        String sub = "tcp://127.0.0.1:" + FreePorts.take(1)[0];
        try (ChildProcess subscriber = ChildProcess.start("kv-subscriber", TestPython.script("kv_events_subscriber.py",
                List.of("--bind", sub, "--seconds", "120")), tmp, Map.of())) {
            subscriber.awaitEvent("ready", WAIT);
            // The demo as a process of its own, through the launcher's run_cli (no build check inside a test run).
            try (ChildProcess demo = ChildProcess.start("demo", List.of("bash", "-c", "source \"$1\"; shift; setup_java; "
                    + "run_cli \"$@\"", "demo", ControllerProcess.LAUNCHER.toString(), "lmcache4j.cli.DemoCommand",
                    // Enough requests to publish for a while (the publisher also holds its first batches for a subscriber).
                    "--requests", "60", "--layers", "1", "--cpu-gb", "0.05", "--no-disk", "--quiet", "--kv-events", sub),
                    tmp, Map.of())) {
                assertEquals(0, demo.awaitExit(WAIT), demo.output());
            }
            Map<String, Object> batch = subscriber.awaitEvent("batch", 1, b -> ((List<Map<String, Object>>) b.get("events"))
                    .stream().anyMatch(e -> "BlockStored".equals(e.get("type"))), WAIT);
            assertEquals(true, batch.get("same_bytes"), batch.toString());
            subscriber.send("quit");
            assertEquals(0, subscriber.awaitExit(WAIT), subscriber.output());
        }
    }

    private static PagedKvCache cache(Arena arena, ModelMetadata m, int blocks, int blockSize) {
        long bytes = PagedKvCache.layerBytes(PagedLayout.FLASH_ATTENTION, blocks, blockSize, m.numKvHeads(), m.headSize(),
                m.kvDtype());
        List<MemorySegment> layers = new ArrayList<>();
        for (int l = 0; l < m.numLayers(); l++) {
            layers.add(arena.allocate(bytes, 64));
        }
        return new PagedKvCache(layers, PagedLayout.FLASH_ATTENTION, blocks, blockSize, m.numKvHeads(), m.headSize(),
                m.kvDtype());
    }

    /** The BlockStored events in {@code medium} among {@code events}, in order. */
    private static List<Map<String, Object>> stored(List<Map<String, Object>> events, String medium) {
        return events.stream().filter(e -> "BlockStored".equals(e.get("type")) && medium.equals(e.get("medium"))).toList();
    }

    /** Asks the subscriber to replay from seq 0 until the replayed events satisfy {@code done}; returns them. */
    @SuppressWarnings("unchecked")
    private static List<Map<String, Object>> replayUntil(ChildProcess subscriber, Predicate<List<Map<String, Object>>> done)
            throws Exception {
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (true) {
            int before = (int) subscriber.events().stream().filter(e -> "replay".equals(e.get("event"))).count();
            subscriber.send("replay");
            Map<String, Object> replayed = subscriber.awaitEvent("replay", before + 1, e -> true, WAIT);
            List<Map<String, Object>> events = (List<Map<String, Object>>) replayed.get("events");
            if (done.test(events)) {
                return events;
            }
            if (System.nanoTime() > deadline) {
                throw new AssertionError("the replay never held what was expected; last " + events);
            }
            Thread.sleep(100);
        }
    }

    private static Map<String, Object> lastReplay(ChildProcess subscriber) {
        return subscriber.events().stream().filter(e -> "replay".equals(e.get("event"))).reduce((a, b) -> b).orElseThrow();
    }

    /** JSON integers as the 64 bits a long holds (Json reads those >= 2^63 as BigInteger). */
    @SuppressWarnings("unchecked")
    private static List<Object> longs(Object jsonList) {
        return ((List<Object>) jsonList).stream()
                .map(n -> (Object) (n instanceof BigInteger b ? b.longValue() : (Long) n)).toList();
    }
}
