package lmcache4j.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.foreign.Arena;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import lmcache4j.allocator.DType;
import lmcache4j.engine.config.ConfigLoader;
import lmcache4j.engine.connector.KvConnector;
import lmcache4j.engine.connector.PagedKvCache;
import lmcache4j.engine.remote.RemoteBackend;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** LMCache's MLA rule: with {@code remote_enable_mla_worker_id_as0}, workers other than 0 read worker 0's copy. */
class RemoteWorkerZeroTest {
    private static LMCacheEngine worker(int id, String url) {
        ModelMetadata model = new ModelMetadata("synthetic/model", 2, id, DType.FLOAT16, SyntheticKv.LAYERS,
                SyntheticKv.HEADS, SyntheticKv.HEAD, false);
        double chunkGb = model.chunkBytes(64) / (double) (1L << 30);
        var config = ConfigLoader.builder().environment(Map.of()).set("chunk_size", 64).set("max_local_cpu_size", 4 * chunkGb)
                .set("remote_url", url).set("hash_seed", "0")
                .set("extra_config", Map.of("remote_enable_mla_worker_id_as0", true)).build();
        return LMCacheEngine.create(config, model, KvConnector.host(), List.of());
    }

    @Test
    void workerOneReadsWorkerZerosCopyAndWritesNothing(@TempDir Path dir) throws Exception {
        String url = "fs://" + dir;
        int[] tokens = SyntheticKv.tokens(128, 41);
        long[] slots = SyntheticKv.slots(128, 64, 41);
        try (Arena arena = Arena.ofShared(); LMCacheEngine zero = worker(0, url); LMCacheEngine one = worker(1, url)) {
            PagedKvCache kv = SyntheticKv.cache(arena, 64);
            SyntheticKv.compute(kv, tokens, slots, 0, 128);
            zero.store(tokens, null, kv, slots, Map.of());
            ((RemoteBackend) zero.storage().tier(RemoteBackend.NAME).orElseThrow()).awaitPuts();
            assertEquals(128, one.lookup(tokens, Map.of(), null), "worker 1 finds worker 0's chunks");
            int[] other = SyntheticKv.tokens(128, 42);
            SyntheticKv.compute(kv, other, slots, 0, 128);
            one.store(other, null, kv, slots, Map.of());
            RemoteBackend remoteOfOne = (RemoteBackend) one.storage().tier(RemoteBackend.NAME).orElseThrow();
            assertEquals(0, remoteOfOne.stats().puts(), "worker 1 writes nothing remotely");
            assertEquals(0, zero.lookup(other, Map.of(), null));
        }
    }
}
