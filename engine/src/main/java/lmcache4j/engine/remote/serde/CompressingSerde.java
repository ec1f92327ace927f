package lmcache4j.engine.remote.serde;

import java.lang.System.Logger.Level;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Supplier;
import java.util.zip.CRC32C;

import io.airlift.compress.Compressor;
import io.airlift.compress.Decompressor;
import io.airlift.compress.lz4.Lz4Compressor;
import io.airlift.compress.lz4.Lz4Decompressor;
import io.airlift.compress.zstd.ZstdCompressor;
import io.airlift.compress.zstd.ZstdDecompressor;
import lmcache4j.allocator.DType;
import lmcache4j.allocator.MemoryFormat;
import lmcache4j.allocator.MemoryObj;
import lmcache4j.allocator.TensorShape;
import lmcache4j.engine.remote.RemoteMetadata;
import lmcache4j.engine.storage.AllocationMode;
import lmcache4j.engine.storage.MemoryProvider;

/**
 * The {@code lz4} and {@code zstd} serdes (lmcache4j-only: LMCache cannot read what they write;
 * {@code naive} stays the interoperable one). Pure Java (aircompressor 2.x, no native code).
 *
 * <p>Stored form: outer {@link RemoteMetadata} {@code BINARY_BUFFER}, no dtype, shape
 * {@code [n, 0, 0, 0]}; payload ({@code n} bytes) = one magic byte ({@value #LZ4_MAGIC} for lz4,
 * {@value #ZSTD_MAGIC} for zstd) + the original object's 28-byte header + the CRC32C of the
 * original bytes (4 bytes, little-endian) + the compressed bytes (an LZ4 raw block, or a zstd
 * frame). The checksum is there because an LZ4 block carries none: a flipped literal would
 * otherwise decompress to the right size and wrong KV.
 *
 * <p>Reading: an entry that is not a byte buffer or has no magic is naive and served as it is; a
 * compressed entry of either algorithm is decompressed into a KV object allocated from its inner
 * header; a corrupt one (bad inner header, decompression failure, a size other than the header's,
 * a checksum mismatch) is a miss, counted, never corrupt KV.
 *
 * <p>aircompressor 2.x reads direct buffers through {@code sun.misc.Unsafe}; JDK 24+ prints a
 * one-time warning on its first use unless the JVM runs with
 * {@code --sun-misc-unsafe-memory-access=allow}. Compression and decompression go straight
 * between off-heap segments (direct {@link ByteBuffer} views), with no heap copies.
 */
public final class CompressingSerde implements RemoteSerde {
    /** The first payload byte of an lz4 entry. */
    public static final byte LZ4_MAGIC = (byte) 0xB4;
    /** The first payload byte of a zstd entry. */
    public static final byte ZSTD_MAGIC = (byte) 0xB5;
    /** Magic byte + inner header + CRC32C. */
    public static final int PREFIX_BYTES = 1 + RemoteMetadata.BYTES + 4;
    private static final long CRC_OFFSET = 1 + RemoteMetadata.BYTES;
    private static final ValueLayout.OfInt INT_LE = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private static final System.Logger LOG = System.getLogger(CompressingSerde.class.getName());

    /** The algorithms. */
    public enum Algorithm {
        LZ4("lz4", LZ4_MAGIC, Lz4Compressor::new, Lz4Decompressor::new),
        ZSTD("zstd", ZSTD_MAGIC, ZstdCompressor::new, ZstdDecompressor::new);

        private final String serdeName;
        private final byte magic;
        // aircompressor's codecs keep scratch state: one per thread.
        private final ThreadLocal<Compressor> compressor;
        private final ThreadLocal<Decompressor> decompressor;

        Algorithm(String serdeName, byte magic, Supplier<Compressor> compressor, Supplier<Decompressor> decompressor) {
            this.serdeName = serdeName;
            this.magic = magic;
            this.compressor = ThreadLocal.withInitial(compressor);
            this.decompressor = ThreadLocal.withInitial(decompressor);
        }

        public byte magic() {
            return magic;
        }

        static Optional<Algorithm> ofMagic(byte magic) {
            for (Algorithm a : values()) {
                if (a.magic == magic) {
                    return Optional.of(a);
                }
            }
            return Optional.empty();
        }
    }

    private final Algorithm algorithm;
    private final LongAdder rawBytes = new LongAdder();
    private final LongAdder storedBytes = new LongAdder();
    private final LongAdder compressNanos = new LongAdder();
    private final LongAdder decompressedBytes = new LongAdder();
    private final LongAdder decompressNanos = new LongAdder();
    private final LongAdder corrupt = new LongAdder();

    public CompressingSerde(Algorithm algorithm) {
        this.algorithm = Objects.requireNonNull(algorithm, "algorithm");
    }

    @Override
    public String name() {
        return algorithm.serdeName;
    }

    public Algorithm algorithm() {
        return algorithm;
    }

    @Override
    public Serialized serialize(MemoryObj obj) {
        RemoteMetadata inner = RemoteMetadata.forObject(obj);
        long start = System.nanoTime();
        Compressor compressor = algorithm.compressor.get();
        int max = compressor.maxCompressedLength(inner.length());
        if ((long) PREFIX_BYTES + max > Integer.MAX_VALUE) {
            throw new IllegalArgumentException(obj + " is too large to compress into one remote object");
        }
        Arena arena = Arena.ofShared();
        try {
            MemorySegment buffer = arena.allocate(PREFIX_BYTES + max, 64);
            buffer.set(ValueLayout.JAVA_BYTE, 0, algorithm.magic);
            inner.encode(buffer.asSlice(1, RemoteMetadata.BYTES));
            buffer.set(INT_LE, CRC_OFFSET, crc32c(obj.segment()));
            ByteBuffer out = buffer.asSlice(PREFIX_BYTES).asByteBuffer();
            compressor.compress(obj.segment().asByteBuffer(), out);
            int n = PREFIX_BYTES + out.position();
            compressNanos.add(System.nanoTime() - start);
            rawBytes.add(inner.length());
            storedBytes.add(n);
            RemoteMetadata outer = new RemoteMetadata(n, MemoryFormat.BINARY_BUFFER, Optional.empty(),
                    TensorShape.of(n, 0, 0, 0));
            return new Serialized(outer, buffer.asSlice(0, n), arena);
        } catch (RuntimeException | Error e) {
            arena.close();
            throw e;
        }
    }

    @Override
    public Optional<MemoryObj> deserialize(MemoryObj stored, MemoryProvider memory) {
        Optional<Algorithm> algo = compressedWith(stored);
        if (algo.isEmpty()) {
            return Optional.of(stored); // a naive entry
        }
        try {
            MemorySegment payload = stored.segment();
            RemoteMetadata inner;
            try {
                inner = RemoteMetadata.decode(payload.asSlice(1, RemoteMetadata.BYTES));
            } catch (IllegalArgumentException e) {
                return corrupt(stored, "its inner header: " + e.getMessage());
            }
            TensorShape shape = inner.toShape();
            DType dtype = inner.dtype().orElse(DType.UINT8);
            if (shape.byteSize(dtype) != inner.length()) {
                return corrupt(stored, "inner header " + inner + " has a length other than its shape's");
            }
            long start = System.nanoTime();
            Optional<MemoryObj> kv = memory.allocate(shape, dtype, inner.format(), AllocationMode.EVICT_AND_WAIT);
            if (kv.isEmpty()) {
                return Optional.empty(); // no memory: a miss like any other
            }
            MemoryObj obj = kv.get();
            ByteBuffer out = obj.segment().asByteBuffer();
            boolean ok;
            String why = null;
            try {
                algo.get().decompressor.get().decompress(payload.asSlice(PREFIX_BYTES).asByteBuffer(), out);
                ok = out.position() == inner.length();
                if (!ok) {
                    why = "it decompressed to " + out.position() + " bytes, its header says " + inner.length();
                } else if (crc32c(obj.segment()) != payload.get(INT_LE, CRC_OFFSET)) {
                    ok = false;
                    why = "the decompressed bytes fail their CRC32C";
                }
            } catch (RuntimeException e) { // MalformedInputException and any bounds failure
                ok = false;
                why = "decompression failed: " + e;
            }
            if (!ok) {
                obj.release();
                return corrupt(stored, why);
            }
            decompressNanos.add(System.nanoTime() - start);
            decompressedBytes.add(inner.length());
            return Optional.of(obj);
        } finally {
            if (algo.isPresent()) {
                stored.release();
            }
        }
    }

    private static int crc32c(MemorySegment bytes) {
        CRC32C crc = new CRC32C();
        crc.update(bytes.asByteBuffer());
        return (int) crc.getValue();
    }

    private Optional<MemoryObj> corrupt(MemoryObj stored, String why) {
        corrupt.increment();
        LOG.log(Level.WARNING, "a compressed remote entry of " + stored.byteSize() + " bytes is corrupt (" + why
                + "): served as a miss");
        return Optional.empty();
    }

    /** The algorithm {@code stored} was compressed with; empty for a naive entry. */
    static Optional<Algorithm> compressedWith(MemoryObj stored) {
        if (stored.format() != MemoryFormat.BINARY_BUFFER || stored.byteSize() < PREFIX_BYTES) {
            return Optional.empty();
        }
        return Algorithm.ofMagic(stored.segment().get(ValueLayout.JAVA_BYTE, 0));
    }

    @Override
    public Counters counters() {
        return new Counters(rawBytes.sum(), storedBytes.sum(), compressNanos.sum(), decompressedBytes.sum(),
                decompressNanos.sum(), corrupt.sum());
    }
}
