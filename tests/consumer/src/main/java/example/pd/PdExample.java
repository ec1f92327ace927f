package example.pd;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Map;
import java.util.Random;

import lmcache4j.allocator.DType;
import lmcache4j.engine.LMCacheEngine;
import lmcache4j.engine.ModelMetadata;
import lmcache4j.engine.PreparedRequest;
import lmcache4j.engine.config.ConfigLoader;
import lmcache4j.engine.config.LMCacheEngineConfig;
import lmcache4j.engine.connector.ExternalKvCache;
import lmcache4j.engine.connector.KvConnector;
import lmcache4j.engine.pd.PdReceiver;
import lmcache4j.engine.pd.PdSender;
import lmcache4j.engine.pd.PdTransfer;

/**
 * Disaggregated prefill in one program, through lmcache4j's exported packages alone: a prefiller
 * engine pushes the KV its model computed for a prompt, 256 positions at a time as a prefill would,
 * to a decoder engine over the authenticated PD channel; the decoder's lookup and retrieve then load
 * the prompt's KV without computing it. In a deployment the two sides are two processes (or two
 * machines) sharing the token, and a proxy tells the prefiller where the decoder is.
 */
public final class PdExample {
    /** Chunks pushed, the decoder's lookup and retrieve, wrong bytes among those retrieved, and the receiver's counters. */
    public record Result(int pushedChunks, int found, int retrievedTokens, long wrongBytes, long landedWrites,
                         long tagFailures) {
    }

    private static final int CHUNK = 256;
    private static final String TOKEN = "an-example-deployment-token-0123456789"; // the same secret in every PD process

    public static void main(String[] args) throws IOException {
        System.out.println(run());
    }

    public static Result run() throws IOException {
        // model name, tensor-parallel world size, this worker, KV dtype, layers, KV heads, head size, MLA
        ModelMetadata model = new ModelMetadata("my-org/my-model", 1, 0, DType.BFLOAT16, 4, 2, 64, false);
        LMCacheEngineConfig decoderConfig = pd("receiver")
                .set("pd_peer_host", "127.0.0.1").set("pd_peer_init_port", List.of(0)).set("pd_peer_alloc_port", List.of(0))
                .build();
        LMCacheEngineConfig prefillerConfig = pd("sender").build(); // no pd_proxy_host: this program is the proxy
        int[] tokens = new Random(3).ints(1_000, 0, 32_000).toArray();
        try (Arena arena = Arena.ofShared();
             LMCacheEngine decoder = LMCacheEngine.create(decoderConfig, model, KvConnector.host(), List.of());
             PdReceiver receiver = PdReceiver.start(decoder);
             LMCacheEngine prefiller = LMCacheEngine.create(prefillerConfig, model, KvConnector.host(), List.of());
             PdSender sender = PdSender.create(prefiller)) {
            ContiguousKv computed = new ContiguousKv(arena, model, tokens.length);
            computed.fill(new Random(4));

            PdTransfer push = sender.begin("request-1", prefiller.prepare(tokens, Map.of()), receiver.peer());
            for (int done = 0; done < tokens.length; ) {
                done = Math.min(done + CHUNK, tokens.length); // the model computed one more batch of positions
                push.pushComputed(computed, done); // each whole chunk in it leaves now, while the next batch computes
            }
            PdTransfer.Result pushed = push.finish();

            ContiguousKv loaded = new ContiguousKv(arena, model, tokens.length);
            PreparedRequest request = decoder.prepare(tokens, Map.of());
            int found = decoder.lookup(request, "request-1");
            boolean[] retrieved = decoder.retrieve(request, loaded, "request-1");
            int retrievedTokens = 0;
            long wrong = 0;
            for (int t = 0; t < tokens.length; t++) {
                if (retrieved[t]) {
                    retrievedTokens++;
                    wrong += computed.differingBytes(loaded, t);
                }
            }
            PdReceiver.Stats s = receiver.stats();
            return new Result(pushed.pushedChunks(), found, retrievedTokens, wrong, s.writes(), s.tagFailures());
        }
    }

    private static ConfigLoader.Builder pd(String role) {
        return ConfigLoader.builder().environment(Map.of()).set("chunk_size", CHUNK).set("max_local_cpu_size", 0.05)
                .set("hash_seed", "0") // both sides must cut the same keys
                .set("enable_pd", true).set("pd_role", role).set("pd_buffer_size", 64.0 * (1 << 20))
                .set("pd_buffer_device", "cpu").set("extra_config", Map.of("p2p_token", TOKEN));
    }

    /** A model's KV in a layout of its own: per layer, keys then values, each {@code [positions, KV heads × head size]}. */
    static final class ContiguousKv implements ExternalKvCache {
        private final ModelMetadata model;
        private final int capacity;
        private final long rowBytes;
        private final MemorySegment memory;

        ContiguousKv(Arena arena, ModelMetadata model, int capacity) {
            this.model = model;
            this.capacity = capacity;
            this.rowBytes = (long) model.numKvHeads() * model.headSize() * model.kvDtype().byteSize();
            this.memory = arena.allocate(2L * model.numLayers() * capacity * rowBytes, 64);
        }

        void fill(Random random) {
            byte[] noise = new byte[(int) memory.byteSize()];
            random.nextBytes(noise);
            MemorySegment.copy(MemorySegment.ofArray(noise), 0, memory, 0, noise.length);
        }

        /** Where position {@code p} of plane {@code kv} (0 keys, 1 values) of layer {@code layer} starts. */
        private long offset(int layer, int kv, int p) {
            return ((long) (2 * layer + kv) * capacity + p) * rowBytes;
        }

        long differingBytes(ContiguousKv other, int p) {
            long wrong = 0;
            for (int l = 0; l < model.numLayers(); l++) {
                for (int kv = 0; kv < 2; kv++) {
                    long o = offset(l, kv, p);
                    wrong += MemorySegment.mismatch(memory, o, o + rowBytes, other.memory, o, o + rowBytes) == -1 ? 0 : rowBytes;
                }
            }
            return wrong;
        }

        @Override
        public void gather(int start, int end, MemorySegment chunk) {
            copy(start, end, chunk, true);
        }

        @Override
        public void scatter(MemorySegment chunk, int start, int end) {
            copy(start, end, chunk, false);
        }

        /** The chunk is {@code [2, layers, end - start, row]}: plane-major, as LMCache lays a chunk out. */
        private void copy(int start, int end, MemorySegment chunk, boolean out) {
            long bytes = (end - start) * rowBytes;
            for (int kv = 0; kv < 2; kv++) {
                for (int l = 0; l < model.numLayers(); l++) {
                    long at = (long) (kv * model.numLayers() + l) * bytes;
                    if (out) {
                        MemorySegment.copy(memory, offset(l, kv, start), chunk, at, bytes);
                    } else {
                        MemorySegment.copy(chunk, at, memory, offset(l, kv, start), bytes);
                    }
                }
            }
        }

        @Override
        public DType dtype() {
            return model.kvDtype();
        }

        @Override
        public int layerCount() {
            return model.numLayers();
        }

        @Override
        public int numKvHeads() {
            return model.numKvHeads();
        }

        @Override
        public int headSize() {
            return model.headSize();
        }

        @Override
        public int capacity() {
            return capacity;
        }
    }

    private PdExample() {
    }
}
