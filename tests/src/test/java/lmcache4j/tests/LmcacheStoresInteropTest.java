package lmcache4j.tests;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import lmcache4j.allocator.DType;
import lmcache4j.allocator.HostArenaOptions;
import lmcache4j.allocator.HostMemoryAllocator;
import lmcache4j.allocator.MemoryFormat;
import lmcache4j.allocator.MemoryObj;
import lmcache4j.allocator.TensorShape;
import lmcache4j.engine.json.Json;
import lmcache4j.engine.key.ChunkHasher;
import lmcache4j.engine.key.ChunkRange;
import lmcache4j.engine.key.ChunkedTokenDatabase;
import lmcache4j.engine.key.HashAlgorithm;
import lmcache4j.engine.key.KeyFactory;
import lmcache4j.engine.remote.RemoteConnector;
import lmcache4j.engine.remote.RemoteConnectorSettings;
import lmcache4j.engine.remote.RemoteConnectors;
import lmcache4j.engine.remote.RemoteMetadata;
import lmcache4j.engine.remote.redis.RedisServerProcess;
import lmcache4j.s3.proxy.S3ProxyProcess;

/**
 * lmcache4j and an LMCache-format Python client share S3, Redis and an {@code fs://} directory with
 * current-form keys, both ways. Java keys a prompt with its token database and stores its chunks
 * through the tier's own connector; {@code tests/python/lmcache_stores.py} keys the same tokens with
 * LMCache's formula (its own cbor2 and SHA-256), reads them in LMCache's layout (S3: the object at the
 * flattened key, its bytes alone, taken only at the full chunk's size; Redis: {@code <key>kv_bytes} and
 * {@code <key>metadata}; FS: {@code <key with -SEP->.data}, header then payload) and writes another
 * prompt's chunks the way LMCache's connectors write them, which Java then reads. The key strings both
 * sides computed, and every byte, must agree.
 */
@Timeout(300)
class LmcacheStoresInteropTest {
    private static final String MODEL = "org/lmcache-interop";
    private static final int CHUNK = 16;
    private static final TensorShape FULL = TensorShape.of(2, 2, CHUNK, 64);
    private static final RemoteMetadata FULL_CHUNK = new RemoteMetadata(Math.toIntExact(FULL.byteSize(DType.BFLOAT16)),
            MemoryFormat.KV_2LTD, Optional.of(DType.BFLOAT16), FULL);
    private static final int[] JAVA_PROMPT = tokens(48, 11);
    private static final int[] PYTHON_PROMPT = tokens(52, 29); // three full chunks and four tokens LMCache's S3 leaves out

    private static int[] tokens(int n, int seed) {
        int[] t = new int[n];
        for (int i = 0; i < n; i++) {
            t[i] = (int) ((i * 2654435761L + seed * 40503L) % 151_936);
        }
        return t;
    }

    private static List<String> keys(int[] tokens) {
        ChunkedTokenDatabase db = new ChunkedTokenDatabase(CHUNK, false, ChunkHasher.seeded(HashAlgorithm.SHA256_CBOR, "0"),
                new KeyFactory(MODEL, 2, 1, DType.BFLOAT16));
        return db.processTokens(tokens).stream().map(ChunkRange::key).map(k -> k.toKeyString()).toList();
    }

    /** What Java stores as chunk {@code i}. */
    private static byte[] javaPayload(int i) {
        byte[] b = new byte[FULL_CHUNK.length()];
        for (int j = 0; j < b.length; j++) {
            b[j] = (byte) (j * 17 + i * 3 + 1);
        }
        return b;
    }

    /** What lmcache_stores.py writes as chunk {@code i}: byte j is (j * 31 + i + 7) mod 256. */
    private static byte[] pythonPayload(int i) {
        byte[] b = new byte[FULL_CHUNK.length()];
        for (int j = 0; j < b.length; j++) {
            b[j] = (byte) (j * 31 + i + 7);
        }
        return b;
    }

    @Test
    void s3() throws Exception {
        try (S3ProxyProcess server = S3ProxyProcess.start("interop")) {
            Map<String, Object> job = new LinkedHashMap<>(Map.of("store", "s3", "endpoint", "http://127.0.0.1:" + server.port(),
                    "bucket", "interop", "access_key", S3ProxyProcess.ACCESS_KEY_ID, "secret_key", S3ProxyProcess.SECRET_ACCESS_KEY));
            roundTrip(server.url("interop"), S3ProxyProcess.credentials(), job);
        }
    }

    @Test
    void redis() throws Exception {
        try (RedisServerProcess server = RedisServerProcess.start()) {
            roundTrip(server.url(), Map.of(), new LinkedHashMap<>(Map.of("store", "redis", "redis_port", server.port())));
        }
    }

    @Test
    void fs(@TempDir Path dir) throws Exception {
        roundTrip("fs://" + dir, Map.of(), new LinkedHashMap<>(Map.of("store", "fs", "fs_dir", dir.toString())));
    }

    private void roundTrip(String url, Map<String, Object> extraConfig, Map<String, Object> job) throws Exception {
        TestPython.require();
        List<String> javaKeys = keys(JAVA_PROMPT);
        List<String> pythonKeys = keys(PYTHON_PROMPT);
        assertEquals(3, javaKeys.size());
        try (RemoteConnector store = RemoteConnectors.create(url,
                new RemoteConnectorSettings(extraConfig, Optional.of(FULL_CHUNK)));
             Arena arena = Arena.ofShared(); // the connectors read payloads on their own threads
             HostMemoryAllocator memory = HostMemoryAllocator.tensor("interop", 1L << 20, HostArenaOptions.DEFAULT)) {
            for (int i = 0; i < javaKeys.size(); i++) {
                MemorySegment payload = arena.allocate(FULL_CHUNK.length());
                MemorySegment.copy(javaPayload(i), 0, payload, ValueLayout.JAVA_BYTE, 0, FULL_CHUNK.length());
                store.put(lmcache4j.engine.key.CacheKeys.parse(javaKeys.get(i)), FULL_CHUNK, payload).get(60, TimeUnit.SECONDS);
            }
            job.putAll(Map.of("model", MODEL, "world_size", 2, "worker_id", 1, "dtype", "bfloat16", "seed", "0",
                    "chunk_size", CHUNK, "chunk_bytes", FULL_CHUNK.length(), "header_hex", HexFormat.of().formatHex(FULL_CHUNK.toBytes())));
            job.put("read_tokens", ints(JAVA_PROMPT));
            job.put("write_tokens", ints(PYTHON_PROMPT));
            Map<String, Object> answer = python(job);

            @SuppressWarnings("unchecked")
            List<Map<String, Object>> read = (List<Map<String, Object>>) answer.get("read");
            assertEquals(javaKeys, read.stream().map(r -> (String) r.get("key")).toList(), "LMCache's formula gives lmcache4j's keys");
            for (int i = 0; i < read.size(); i++) {
                assertEquals(sha256(javaPayload(i)), read.get(i).get("sha256"), "LMCache's reader got chunk " + i + " byte for byte");
            }
            assertEquals(pythonKeys, answer.get("wrote"), "and lmcache4j keys LMCache's writes the same");
            for (int i = 0; i < pythonKeys.size(); i++) {
                MemoryObj obj = store.get(lmcache4j.engine.key.CacheKeys.parse(pythonKeys.get(i)),
                                m -> memory.allocate(m.toShape(), m.dtype().orElseThrow(), m.format()))
                        .get(60, TimeUnit.SECONDS).orElseThrow(() -> new AssertionError("lmcache4j missed a chunk LMCache wrote"));
                try {
                    assertArrayEquals(pythonPayload(0 + i), obj.segment().toArray(ValueLayout.JAVA_BYTE));
                    assertEquals(FULL, obj.shape());
                } finally {
                    obj.release();
                }
            }
        }
    }

    private static List<Integer> ints(int[] t) {
        List<Integer> l = new ArrayList<>(t.length);
        for (int v : t) {
            l.add(v);
        }
        return l;
    }

    private static String sha256(byte[] b) throws Exception {
        return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(b));
    }

    private static Map<String, Object> python(Map<String, Object> job) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(TestPython.script("lmcache_stores.py", List.of())).redirectError(ProcessBuilder.Redirect.PIPE).start();
        p.getOutputStream().write(Json.write(new HashMap<>(job)).getBytes(StandardCharsets.UTF_8));
        p.getOutputStream().close();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(120, TimeUnit.SECONDS), "lmcache_stores.py did not finish");
        assertEquals(0, p.exitValue(), "lmcache_stores.py failed:\n" + err + out);
        return Json.parseObject(out.strip());
    }
}
