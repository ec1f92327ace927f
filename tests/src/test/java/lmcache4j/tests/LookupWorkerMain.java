package lmcache4j.tests;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import lmcache4j.allocator.DType;
import lmcache4j.engine.LMCacheEngine;
import lmcache4j.engine.ModelMetadata;
import lmcache4j.engine.PrefetchStats;
import lmcache4j.engine.config.ConfigLoader;
import lmcache4j.engine.config.LMCacheEngineConfig;
import lmcache4j.engine.connector.KvConnector;
import lmcache4j.engine.connector.PagedKvCache;
import lmcache4j.engine.connector.PagedLayout;
import lmcache4j.engine.storage.disk.LocalDiskBackend;
import lmcache4j.server.lookup.LookupServer;

/**
 * A worker process for the lookup-service tests: an engine with a CPU and a disk tier and its
 * lookup server, driven by one command a line on stdin, answering one JSON line each on stdout.
 * {@code store SEED TOKENS} stores a prompt and drops it from memory (so a lookup must prefetch it
 * from disk); {@code retrieve SEED TOKENS ID} retrieves it for request ID and checks every word;
 * {@code stats} prints the prefetch and server counters. At end of input it closes the server and
 * the engine, whose allocator fails on any leaked object (exit status 3).
 *
 * <p>Arguments: scheduler URL, worker URL, disk directory, {@code pin_timeout_sec}.
 */
public final class LookupWorkerMain {
    static final ModelMetadata MODEL = new ModelMetadata("lookup/model", 1, 0, DType.BFLOAT16, 2, 4, 32, false);
    static final int CHUNK = 64;
    private static final int BLOCK = 16;
    private static final int BLOCKS = 64;

    private LookupWorkerMain() {
    }

    /** The config both processes share: the scheduler's client hashes as the worker does. */
    static LMCacheEngineConfig config(String schedulerUrl, String workerUrl, Path disk, int pinTimeoutSec) {
        double chunkGb = MODEL.chunkBytes(CHUNK) / (double) (1L << 30);
        return ConfigLoader.builder().environment(Map.of()).set("chunk_size", CHUNK)
                .set("max_local_cpu_size", 16 * chunkGb).set("local_disk", disk.toString())
                .set("max_local_disk_size", 0.02).set("hash_seed", "0").set("enable_async_loading", true)
                .set("pin_timeout_sec", pinTimeoutSec).set("lookup_scheduler_url", schedulerUrl)
                .set("lookup_worker_urls", List.of(workerUrl)).set("lookup_timeout_ms", 10_000).build();
    }

    /** The prompt of {@code seed}: {@code n} token ids. */
    static int[] prompt(int seed, int n) {
        int[] tokens = new int[n];
        for (int t = 0; t < n; t++) {
            tokens[t] = (int) ((seed * 1_000_003L + t * 7919L) % 128_000);
        }
        return tokens;
    }

    public static void main(String[] args) throws Exception {
        LMCacheEngineConfig config = config(args[0], args[1], Path.of(args[2]), Integer.parseInt(args[3]));
        long[] slots = new long[BLOCKS * BLOCK];
        for (int t = 0; t < slots.length; t++) {
            slots[t] = (BLOCKS - 1 - t / BLOCK) * (long) BLOCK + t % BLOCK;
        }
        int status = 0;
        try (Arena arena = Arena.ofShared()) {
            LMCacheEngine engine = LMCacheEngine.create(config, MODEL, KvConnector.host(), List.of());
            LookupServer server = LookupServer.start(engine);
            System.out.println("{\"event\":\"ready\"}");
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            for (String line; (line = in.readLine()) != null && !line.equals("exit"); ) {
                String[] cmd = line.trim().split(" ");
                switch (cmd[0]) {
                    case "store" -> {
                        int[] tokens = prompt(Integer.parseInt(cmd[1]), Integer.parseInt(cmd[2]));
                        PagedKvCache kv = cache(arena);
                        PrefixKv.write(kv, PrefixKv.prefixHashes(tokens), slots, 0, tokens.length);
                        int stored = engine.store(tokens, null, kv, slots, Map.of());
                        ((LocalDiskBackend) engine.storage().tier(LocalDiskBackend.NAME).orElseThrow()).awaitPuts();
                        engine.storage().cpu().clear();
                        System.out.println("{\"event\":\"stored\",\"tokens\":" + stored + "}");
                    }
                    case "retrieve" -> {
                        int[] tokens = prompt(Integer.parseInt(cmd[1]), Integer.parseInt(cmd[2]));
                        long before = engine.prefetchStats().retrievedChunks();
                        PagedKvCache kv = cache(arena);
                        PrefixKv.poison(kv, slots, 0, tokens.length);
                        boolean[] loaded = engine.retrieve(tokens, null, kv, slots, Map.of(), cmd[3]);
                        int n = 0;
                        while (n < loaded.length && loaded[n]) {
                            n++;
                        }
                        long bad = PrefixKv.mismatchingWords(kv, PrefixKv.prefixHashes(tokens), slots, 0, n);
                        System.out.println("{\"event\":\"retrieved\",\"loaded\":" + n + ",\"mismatches\":" + bad
                                + ",\"fromPrefetch\":" + (engine.prefetchStats().retrievedChunks() - before) + "}");
                    }
                    case "stats" -> {
                        PrefetchStats p = engine.prefetchStats();
                        LookupServer.Stats s = server.stats();
                        System.out.println("{\"event\":\"stats\",\"held\":" + p.held() + ",\"expired\":" + p.expired()
                                + ",\"consumed\":" + p.consumed() + ",\"lowerTierChunks\":" + p.lowerTierChunks()
                                + ",\"malformed\":" + s.malformed() + ",\"answered\":" + s.answered()
                                + ",\"liveObjects\":" + engine.storage().cpu().allocator().stats().liveObjects()
                                + ",\"cpuChunks\":" + engine.storage().cpu().size() + "}");
                    }
                    default -> System.out.println("{\"event\":\"error\",\"message\":\"unknown command " + cmd[0] + "\"}");
                }
            }
            server.close();
            try {
                engine.close(); // the allocator's leak check
                System.out.println("{\"event\":\"closed\"}");
            } catch (RuntimeException e) {
                System.out.println("{\"event\":\"leak\"}");
                e.printStackTrace();
                status = 3;
            }
        }
        System.exit(status);
    }

    private static PagedKvCache cache(Arena arena) {
        long bytes = PagedKvCache.layerBytes(PagedLayout.FLASH_ATTENTION, BLOCKS, BLOCK, MODEL.numKvHeads(), MODEL.headSize(),
                DType.BFLOAT16);
        List<MemorySegment> layers = new ArrayList<>();
        for (int l = 0; l < MODEL.numLayers(); l++) {
            layers.add(arena.allocate(bytes, 64));
        }
        return new PagedKvCache(layers, PagedLayout.FLASH_ATTENTION, BLOCKS, BLOCK, MODEL.numKvHeads(), MODEL.headSize(),
                DType.BFLOAT16);
    }
}
