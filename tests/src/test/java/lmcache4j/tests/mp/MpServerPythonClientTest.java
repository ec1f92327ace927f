package lmcache4j.tests.mp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import lmcache4j.engine.json.Json;
import lmcache4j.engine.remote.redis.RedisServerProcess;
import lmcache4j.server.mp.MpL2Settings;
import lmcache4j.server.mp.MpServer;
import lmcache4j.server.mp.MpServerSettings;
import lmcache4j.tests.TestPython;

/**
 * An LMCache MP client in Python (tests/python/mp_client.py: the real msgspec and pyzmq, the
 * engine-driven shared-memory transfer) against {@link MpServer}: two tensor-parallel ranks
 * register, store a prompt, store it again (all cached), the scheduler looks it up and polls the
 * prefetch status, both ranks retrieve it with every byte compared, another prompt misses, a
 * chunk only one rank stored ends the prefix, sessions end and the ranks unregister. Then a
 * server restart in the middle: chunks stored before it are a miss after it, never wrong bytes;
 * unless a lower tier (a disk directory, a Redis server, a shared file system) kept them, when the
 * restarted server loads them back and both ranks retrieve every byte.
 */
@Timeout(180)
class MpServerPythonClientTest {
    private static final long POOL = 64L << 20;

    @BeforeAll
    static void python() {
        TestPython.require();
    }

    @Test
    void lmcachesClientStoresLooksUpAndRetrievesEveryByteWithTwoRanks() throws Exception {
        try (MpServer server = MpServer.start(MpServerSettings.loopback(POOL))) {
            Map<String, Object> out = client(server.port(), "full");
            assertEquals(Boolean.TRUE, out.get("ok"), out.toString());
            assertEquals(4L, ((Number) out.get("lookup_hits")).longValue());
            assertEquals(0L, ((Number) out.get("miss_hits")).longValue());
            assertEquals(1L, ((Number) out.get("tp_partial_hits")).longValue());
            assertTrue(server.status().objects() > 0, "chunks are held: " + server.status());
        }
        assertFalse(Files.exists(Path.of("/dev/shm").resolve(MpServerSettings.loopback(POOL).shmName())));
    }

    @Test
    void aRestartedServerServesAMissNotWrongBytes() throws Exception {
        MpServerSettings settings = MpServerSettings.loopback(POOL);
        int port;
        try (MpServer first = MpServer.start(settings)) {
            port = first.port();
            Map<String, Object> stored = client(port, "store");
            assertEquals(Boolean.TRUE, stored.get("ok"), stored.toString());
            Map<String, Object> before = client(port, "retrieve");
            assertEquals(4L, ((Number) before.get("lookup_hits")).longValue(), before.toString());
        }
        try (MpServer second = MpServer.start(settings.withPorts(port, 0))) {
            Map<String, Object> after = client(second.port(), "retrieve");
            assertEquals(Boolean.TRUE, after.get("ok"), after.toString());
            assertEquals(0L, ((Number) after.get("lookup_hits")).longValue(), "a new pool holds nothing: " + after);
        }
    }

    @Test
    void aRestartedServerWithADiskTierServesWhatTheFirstOneStoredEveryByteEqual(@TempDir Path disk) throws Exception {
        restartedServerServesFromTheLowerTier(MpL2Settings.NONE.withDisk(disk, 256L << 20));
    }

    @Test
    void aRestartedServerWithARedisTierServesWhatTheFirstOneStoredEveryByteEqual() throws Exception {
        try (RedisServerProcess redis = RedisServerProcess.start()) {
            restartedServerServesFromTheLowerTier(MpL2Settings.NONE.withRemote(redis.url()));
        }
    }

    @Test
    void aRestartedServerWithAFileSystemTierServesWhatTheFirstOneStoredEveryByteEqual(@TempDir Path shared)
            throws Exception {
        restartedServerServesFromTheLowerTier(MpL2Settings.NONE.withRemote("fs://" + shared));
    }

    /**
     * Two ranks store a prompt through the first server, which writes it through to {@code tier};
     * a second server with an empty pool and the same tier loads it on the scheduler's lookup, and
     * both ranks retrieve it, every byte compared by the Python client.
     */
    private static void restartedServerServesFromTheLowerTier(MpL2Settings tier) throws Exception {
        MpServerSettings settings = MpServerSettings.loopback(POOL).withL2(tier.withStaging(64L << 20, 64));
        int port;
        try (MpServer first = MpServer.start(settings)) {
            port = first.port();
            Map<String, Object> stored = client(port, "store");
            assertEquals(Boolean.TRUE, stored.get("ok"), stored.toString());
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (first.status().l2().tierWrites() < 8 && System.nanoTime() < deadline) { // 4 chunks × 2 ranks
                Thread.sleep(10);
            }
            assertEquals(8L, first.status().l2().tierWrites(), first.status().l2().toString());
        }
        try (MpServer second = MpServer.start(settings.withPorts(port, 0))) {
            assertEquals(0L, second.status().objects(), "a new pool");
            Map<String, Object> after = client(second.port(), "retrieve");
            assertEquals(Boolean.TRUE, after.get("ok"), after.toString());
            assertEquals(4L, ((Number) after.get("lookup_hits")).longValue(), "loaded from " + tier + ": " + after);
            for (Object r : (List<?>) after.get("retrieves")) { // each rank: every chunk, every byte compared
                Map<?, ?> got = (Map<?, ?>) r;
                assertEquals(List.of(true, 4L, 0L), List.of(got.get("success"), ((Number) got.get("chunks")).longValue(),
                        ((Number) got.get("wrong_bytes")).longValue()), after.toString());
            }
            assertEquals(8L, second.status().l2().prefetchedObjects(), second.status().l2().toString());
        }
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> client(int port, String scenario) throws IOException, InterruptedException {
        List<String> args = new ArrayList<>(List.of(scenario, "--port", Integer.toString(port)));
        Path err = Files.createTempFile("mp-client", ".err");
        try {
            Process p = new ProcessBuilder(TestPython.script("mp_client.py", args)).redirectError(err.toFile()).start();
            String stdout = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertTrue(p.waitFor(120, TimeUnit.SECONDS), "the client finished");
            String stderr = Files.readString(err);
            assertFalse(stdout.isBlank(), "the client printed nothing; stderr: " + stderr);
            return (Map<String, Object>) Json.parse(stdout.strip());
        } finally {
            Files.deleteIfExists(err);
        }
    }
}
