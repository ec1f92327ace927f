package lmcache4j.engine.storage.cpu;

import static lmcache4j.engine.storage.TestChunks.key;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.TimeUnit;

import lmcache4j.allocator.MemoryObj;
import lmcache4j.engine.key.CacheKey;
import lmcache4j.engine.storage.AllocationMode;
import lmcache4j.engine.storage.TestChunks;
import lmcache4j.engine.storage.TieredPrefix;
import lmcache4j.engine.storage.StorageManager;
import org.junit.jupiter.api.Test;

/**
 * Several threads storing and reading overlapping prefixes through the storage manager, under
 * eviction pressure (16 keys, room for 6 chunks): they finish within a bound, every chunk read
 * holds its own key's bytes, and the accounting is exact at the end.
 */
class LocalCpuBackendConcurrencyTest {
    @Test
    void overlappingPrefixesUnderEvictionPressure() throws Exception {
        LocalCpuBackend cpu = TestChunks.cpuTier(6, "LRU", 2);
        List<Throwable> failures = Collections.synchronizedList(new ArrayList<>());
        try (StorageManager storage = new StorageManager(cpu, List.of())) {
            List<Thread> threads = new ArrayList<>();
            for (int t = 0; t < 4; t++) {
                long seed = t;
                threads.add(Thread.ofPlatform().name("worker-" + t).start(() -> {
                    Random random = new Random(seed);
                    try {
                        for (int round = 0; round < 400; round++) {
                            int length = 1 + random.nextInt(8);
                            int base = random.nextInt(8);
                            List<CacheKey> prefix = new ArrayList<>();
                            for (int i = 0; i < length; i++) {
                                prefix.add(key(base + i));
                            }
                            TieredPrefix hit = storage.batchedContains(prefix, true);
                            List<MemoryObj> got = storage.batchedGet(prefix.subList(0, hit.hits()));
                            for (int i = 0; i < got.size(); i++) {
                                assertEquals(base + i, TestChunks.marker(got.get(i)), "corrupt chunk read");
                            }
                            got.forEach(MemoryObj::release);
                            storage.unpin(hit);
                            storage.touchCache();
                            for (int i = hit.hits(); i < length; i++) {
                                Optional<MemoryObj> obj = TestChunks.chunk(cpu, base + i, AllocationMode.EVICT);
                                if (obj.isEmpty()) {
                                    break;
                                }
                                storage.batchedPut(List.of(prefix.get(i)), List.of(obj.get()), Optional.empty());
                            }
                        }
                    } catch (Throwable e) {
                        failures.add(e);
                    }
                }));
            }
            for (Thread t : threads) {
                t.join(TimeUnit.SECONDS.toMillis(60));
                assertTrue(!t.isAlive(), t.getName() + " did not finish in 60 s");
            }
            assertEquals(List.of(), failures);
            cpu.memcheck();
            var stats = cpu.allocator().stats();
            assertEquals(cpu.size(), stats.liveObjects(), "only cached objects are live");
            assertEquals(0, stats.pinnedObjects());
            assertTrue(cpu.evictions() > 0, "the test ran under eviction pressure");
        }
    }
}
