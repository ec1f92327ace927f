package example.remote;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;

import lmcache4j.allocator.DType;
import lmcache4j.allocator.HostArenaOptions;
import lmcache4j.allocator.HostMemoryAllocator;
import lmcache4j.allocator.MemoryFormat;
import lmcache4j.allocator.MemoryObj;
import lmcache4j.allocator.TensorShape;
import lmcache4j.engine.ModelMetadata;
import lmcache4j.engine.config.ConfigLoader;
import lmcache4j.engine.config.LMCacheEngineConfig;
import lmcache4j.engine.key.CacheEngineKey;
import lmcache4j.engine.key.ChunkHash;
import lmcache4j.engine.remote.RemoteConnector;
import lmcache4j.engine.remote.RemoteConnectors;
import lmcache4j.engine.remote.RemoteMetadata;

/**
 * A program that reads and writes chunks of a shared store itself, without an engine: it writes
 * one chunk in LMCache's remote format to a file-system store ({@code fs://DIR}, args[0]) and reads
 * it back into memory of its own allocator, through the store an engine config's {@code remote_url}
 * names (as a reader configured like its engines would).
 */
public final class RemoteChunkExample {
    /** Whether the chunk was found after the put, and how many of its bytes came back different. */
    public record Result(boolean found, long bytes, long wrongBytes) {
    }

    public static void main(String[] args) {
        System.out.println(run(Path.of(args[0])));
    }

    public static Result run(Path directory) {
        TensorShape shape = TensorShape.of(2, 4, 256, 1024); // K/V, 4 layers, 256 tokens, 1024 values: 4 MiB of bf16
        CacheEngineKey key = new CacheEngineKey("my-org/my-model", 1, 0, ChunkHash.fromHex("ab".repeat(32)), DType.BFLOAT16);
        LMCacheEngineConfig config = ConfigLoader.builder().environment(Map.of())
                .set("remote_url", "fs://" + directory.toAbsolutePath()).build();
        ModelMetadata model = new ModelMetadata("my-org/my-model", 1, 0, DType.BFLOAT16, 4, 8, 128, false);
        try (HostMemoryAllocator memory = HostMemoryAllocator.tensor("chunks", 16L << 20, HostArenaOptions.DEFAULT);
             RemoteConnector store = RemoteConnectors.create("fs://" + directory.toAbsolutePath());
             RemoteConnector configured = RemoteConnectors.create(config, model)) {
            MemoryObj chunk = memory.allocate(shape, DType.BFLOAT16, MemoryFormat.KV_2LTD).orElseThrow();
            for (long o = 0; o < chunk.byteSize(); o += 8) {
                chunk.segment().set(ValueLayout.JAVA_LONG, o, o * 0x9E3779B97F4A7C15L);
            }
            store.put(key, RemoteMetadata.forObject(chunk), chunk.segment()).join();

            // The store says what it holds; the reader gives it memory of that shape to read into.
            Optional<MemoryObj> back = configured.get(key, stored -> memory.allocate(stored.toShape(),
                    stored.dtype().orElseThrow(), stored.format())).join();
            long bytes = chunk.byteSize();
            long wrong = back.map(b -> differingBytes(chunk.segment(), b.segment())).orElse(bytes);
            back.ifPresent(MemoryObj::release);
            chunk.release(); // every object released before the allocator closes
            return new Result(back.isPresent(), bytes, wrong);
        }
    }

    private static long differingBytes(MemorySegment a, MemorySegment b) {
        if (a.byteSize() != b.byteSize()) {
            return Math.max(a.byteSize(), b.byteSize());
        }
        long wrong = 0;
        for (long o = 0; o < a.byteSize(); o++) {
            wrong += a.get(ValueLayout.JAVA_BYTE, o) == b.get(ValueLayout.JAVA_BYTE, o) ? 0 : 1;
        }
        return wrong;
    }

    private RemoteChunkExample() {
    }
}
