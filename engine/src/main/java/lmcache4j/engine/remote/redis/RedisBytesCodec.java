package lmcache4j.engine.remote.redis;

import java.nio.ByteBuffer;

import io.lettuce.core.codec.RedisCodec;
import io.lettuce.core.codec.ToByteBufEncoder;
import io.netty.buffer.ByteBuf;

/**
 * Keys as {@code byte[]}, values as {@link ByteBuffer}s. Values are encoded straight into Netty's
 * outbound buffer from the caller's buffer (for puts a view of the off-heap payload segment, so the
 * payload is copied once, off-heap to off-heap, and never through the heap); a duplicate is read,
 * so re-encoding a command sends the same bytes. Decoded values (only the 28-byte metadata; payloads
 * go through {@link SegmentOutput}) are small heap copies.
 */
final class RedisBytesCodec implements RedisCodec<byte[], ByteBuffer>, ToByteBufEncoder<byte[], ByteBuffer> {
    static final RedisBytesCodec INSTANCE = new RedisBytesCodec();

    private RedisBytesCodec() {
    }

    @Override
    public byte[] decodeKey(ByteBuffer bytes) {
        byte[] b = new byte[bytes.remaining()];
        bytes.get(b);
        return b;
    }

    @Override
    public ByteBuffer decodeValue(ByteBuffer bytes) {
        ByteBuffer copy = ByteBuffer.allocate(bytes.remaining());
        copy.put(bytes).flip();
        return copy;
    }

    @Override
    public ByteBuffer encodeKey(byte[] key) {
        return ByteBuffer.wrap(key);
    }

    @Override
    public ByteBuffer encodeValue(ByteBuffer value) {
        return value.duplicate();
    }

    @Override
    public void encodeKey(byte[] key, ByteBuf target) {
        target.writeBytes(key);
    }

    @Override
    public void encodeValue(ByteBuffer value, ByteBuf target) {
        target.writeBytes(value.duplicate());
    }

    @Override
    public int estimateSize(Object keyOrValue) {
        if (keyOrValue instanceof byte[] b) {
            return b.length;
        }
        if (keyOrValue instanceof ByteBuffer bb) {
            return bb.remaining();
        }
        return 0;
    }

    @Override
    public boolean isEstimateExact() {
        return true;
    }
}
