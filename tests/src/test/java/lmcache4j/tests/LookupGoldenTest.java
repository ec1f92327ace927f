package lmcache4j.tests;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import lmcache4j.allocator.DType;
import lmcache4j.engine.LMCacheEngine;
import lmcache4j.engine.config.LMCacheEngineConfig;
import lmcache4j.engine.connector.KvConnector;
import lmcache4j.engine.connector.PagedKvCache;
import lmcache4j.engine.connector.PagedLayout;
import lmcache4j.engine.controller.ControllerKeys;
import lmcache4j.engine.json.Json;
import lmcache4j.engine.key.ChunkHasher;
import lmcache4j.engine.key.ChunkRange;
import lmcache4j.engine.key.HashAlgorithm;
import lmcache4j.engine.lookup.LookupClient;
import lmcache4j.engine.lookup.LookupRequest;
import lmcache4j.engine.lookup.LookupWire;
import lmcache4j.server.lookup.LookupServer;

/**
 * The lookup frames against LMCache's own construction, in Python (tests/python/lookup_frames.py, in
 * the tests' Python environment, {@link TestPython}): the request LMCache's async client builds
 * from a prompt's hashes is byte for byte the one lmcache4j's client builds, and lmcache4j's lookup
 * server answers it with the 2 frames LMCache's client reads.
 */
class LookupGoldenTest {
    private static final int TOKENS = 320; // 5 chunks

    @Test
    void lmcacheBuiltFramesEqualLmcache4jsAndTheServerAnswersThem(@TempDir Path dir) throws Exception {
        TestPython.require();
        String scheduler = "tcp://127.0.0.1:" + LookupServiceProcessTest.freePort();
        String worker = "tcp://127.0.0.1:" + LookupServiceProcessTest.freePort();
        LMCacheEngineConfig config = LookupWorkerMain.config(scheduler, worker, dir.resolve("disk"), 60);
        int[] tokens = LookupWorkerMain.prompt(7, TOKENS);
        Map<String, String> configs = new LinkedHashMap<>();
        configs.put("lmcache.tag.user", "alice");
        configs.put("lmcache.tag.app", "chat");
        LookupRequest expected;
        try (Arena arena = Arena.ofShared();
             LMCacheEngine engine = LMCacheEngine.create(config, LookupWorkerMain.MODEL, KvConnector.host(), List.of())) {
            long[] slots = new long[TOKENS];
            for (int t = 0; t < TOKENS; t++) {
                slots[t] = t;
            }
            PagedKvCache kv = cache(arena);
            PrefixKv.write(kv, PrefixKv.prefixHashes(tokens), slots, 0, TOKENS);
            assertEquals(TOKENS, engine.store(tokens, null, kv, slots, configs));
            List<ChunkRange> chunks = engine.prepare(tokens, configs).chunks();
            expected = new LookupRequest("golden-1", ControllerKeys.of(ControllerKeys.Scheme.LMCACHE,
                    ChunkHasher.seeded(HashAlgorithm.SHA256_CBOR, "0"), tokens, chunks),
                    chunks.stream().mapToInt(ChunkRange::length).toArray(), configs);

            List<String> hashes = new ArrayList<>();
            for (long h : expected.chunkHashes()) {
                hashes.add(Long.toUnsignedString(h)); // Python ints, unsigned
            }
            String spec = "{\"worker\":\"" + worker + "\",\"scheduler\":\"" + scheduler + "\",\"lookup_id\":\"golden-1\","
                    + "\"hashes\":[" + String.join(",", hashes) + "],\"offsets\":[64,64,64,64,64],"
                    + "\"request_configs\":{\"lmcache.tag.user\":\"alice\",\"lmcache.tag.app\":\"chat\"}}";
            List<Map<String, Object>> events;
            try (LookupServer server = LookupServer.start(engine)) {
                events = runPython(dir, spec);
                assertEquals(1, server.stats().answered());
                assertEquals(0, server.stats().malformed());
            }
            assertEquals("frames", events.get(0).get("event"));
            List<?> pythonFrames = (List<?>) events.get(0).get("frames");
            List<String> javaFrames = LookupWire.encodeRequest(expected).stream().map(HexFormat.of()::formatHex).toList();
            assertEquals(pythonFrames, javaFrames, "LMCache's frames, built in Python, and lmcache4j's");
            assertEquals("answer", events.get(1).get("event"), events.toString());
            assertEquals("golden-1", events.get(1).get("lookup_id"));
            assertEquals(TOKENS, ((Number) events.get(1).get("hits")).intValue(), "every chunk was in the CPU tier");
            assertEquals(4, ((Number) events.get(1).get("hit_frame_bytes")).intValue());
            engine.retrieve(tokens, null, cache(arena), slots, configs, "golden-1"); // consumes the prefetch
        }
        // lmcache4j's client hashes the prompt into the same request
        try (LookupClient client = LookupClient.open(config, LookupWorkerMain.MODEL)) {
            assertEquals(expected, client.request(tokens, "golden-1", configs));
        }
    }

    private static List<Map<String, Object>> runPython(Path dir, String spec) throws Exception {
        Path err = dir.resolve("python.stderr");
        Process p = new ProcessBuilder(TestPython.script("lookup_frames.py", List.of(spec))).redirectError(err.toFile()).start();
        String out = new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
        if (!p.waitFor(60, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError("the Python side did not finish\n" + out + Files.readString(err));
        }
        assertEquals(0, p.exitValue(), "python: " + out + Files.readString(err));
        List<Map<String, Object>> events = new ArrayList<>();
        for (String line : out.split("\n")) {
            if (line.startsWith("{")) {
                events.add(Json.parseObject(line));
            }
        }
        return events;
    }

    private static PagedKvCache cache(Arena arena) {
        var m = LookupWorkerMain.MODEL;
        long bytes = PagedKvCache.layerBytes(PagedLayout.FLASH_ATTENTION, 64, 16, m.numKvHeads(), m.headSize(), DType.BFLOAT16);
        List<MemorySegment> layers = new ArrayList<>();
        for (int l = 0; l < m.numLayers(); l++) {
            layers.add(arena.allocate(bytes, 64));
        }
        return new PagedKvCache(layers, PagedLayout.FLASH_ATTENTION, 64, 16, m.numKvHeads(), m.headSize(), DType.BFLOAT16);
    }
}
