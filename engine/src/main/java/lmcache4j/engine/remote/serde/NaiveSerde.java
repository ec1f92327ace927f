package lmcache4j.engine.remote.serde;

import java.lang.foreign.ValueLayout;
import java.util.Optional;

import lmcache4j.allocator.MemoryObj;
import lmcache4j.engine.remote.RemoteMetadata;
import lmcache4j.engine.storage.MemoryProvider;

/**
 * LMCache's {@code naive} serde: the object's header and its bytes, unchanged. Entries read back
 * are served as they are, except entries lmcache4j wrote compressed (a {@code BINARY_BUFFER} whose
 * first byte is a compression magic): those are decompressed, so switching {@code remote_serde}
 * back to naive neither orphans them nor serves them raw under a KV key.
 */
public final class NaiveSerde implements RemoteSerde {
    /** The one instance: it holds no state. */
    public static final NaiveSerde INSTANCE = new NaiveSerde();

    private NaiveSerde() {
    }

    @Override
    public String name() {
        return "naive";
    }

    @Override
    public Serialized serialize(MemoryObj obj) {
        RemoteMetadata metadata = RemoteMetadata.forObject(obj);
        obj.retain(); // held until the connector has sent the bytes
        return new Serialized(metadata, obj.segment(), obj::release);
    }

    @Override
    public Optional<MemoryObj> deserialize(MemoryObj stored, MemoryProvider memory) {
        if (stored.format() == lmcache4j.allocator.MemoryFormat.BINARY_BUFFER && stored.byteSize() > 0) {
            byte first = stored.segment().get(ValueLayout.JAVA_BYTE, 0);
            if (first == CompressingSerde.LZ4_MAGIC || first == CompressingSerde.ZSTD_MAGIC) {
                return CompressedReader.INSTANCE.deserialize(stored, memory); // reads lz4 and zstd entries alike
            }
        }
        return Optional.of(stored);
    }

    /** Decodes lmcache4j's compressed entries for a naive reader; made on first need. */
    private static final class CompressedReader {
        static final RemoteSerde INSTANCE = RemoteSerde.forName("lz4");
    }

    @Override
    public Counters counters() {
        return Counters.NONE;
    }
}
