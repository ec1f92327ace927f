package lmcache4j.engine.events;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * msgspec's msgpack encoding of vLLM's {@code KVEventBatch}: structs declared {@code array_like=True}
 * are arrays of every field in order (msgspec writes defaults in array form too), a tagged struct's
 * array starts with its class name. So a batch is {@code [ts, [event, ...], data_parallel_rank]}
 * and the events are {@code ["BlockStored", hashes, parent, token_ids, block_size, lora_id, medium,
 * lora_name, extra_keys, group_idx]}, {@code ["BlockRemoved", hashes, medium, group_idx]} and
 * {@code ["AllBlocksCleared"]}, the fields lmcache4j has no value for nil. A subscriber with an older
 * vLLM's classes (fewer trailing fields) decodes them too: msgspec ignores extra trailing array
 * elements. Integers take their smallest form (a hash >= 2^63 is uint64), floats float64, strings
 * their shortest header, as msgspec writes them.
 */
public final class KvEventCodec {
    private KvEventCodec() {
    }

    /** The payload frame of one batch published at {@code timestampSeconds}. */
    public static byte[] batch(double timestampSeconds, List<KvEvent> events) {
        Out out = new Out();
        out.array(3).float64(timestampSeconds).array(events.size());
        for (KvEvent e : events) {
            switch (e) {
                case KvEvent.BlockStored s -> {
                    out.array(10).str("BlockStored").hashes(s.blockHashes());
                    if (s.parentBlockHash().isPresent()) {
                        out.unsigned(s.parentBlockHash().getAsLong());
                    } else {
                        out.nil();
                    }
                    out.array(s.tokenIds().length);
                    for (int t : s.tokenIds()) {
                        out.integer(t);
                    }
                    // lora_id, medium, lora_name, extra_keys, group_idx
                    out.integer(s.blockSize()).nil().str(s.medium()).nil().nil().nil();
                }
                case KvEvent.BlockRemoved r -> out.array(4).str("BlockRemoved").hashes(r.blockHashes()).str(r.medium()).nil();
                case KvEvent.AllBlocksCleared c -> out.array(1).str("AllBlocksCleared");
            }
        }
        return out.nil().bytes(); // data_parallel_rank
    }

    /** A minimal msgpack writer: the forms above, each in msgspec's choice of width. */
    private static final class Out {
        private final ByteArrayOutputStream bytes = new ByteArrayOutputStream(256);

        Out array(int n) {
            if (n < 16) {
                bytes.write(0x90 | n);
            } else if (n < 1 << 16) {
                bytes.write(0xdc);
                be(n, 2);
            } else {
                bytes.write(0xdd);
                be(n, 4);
            }
            return this;
        }

        Out hashes(long[] hashes) {
            array(hashes.length);
            for (long h : hashes) {
                unsigned(h);
            }
            return this;
        }

        /** {@code bits} read as an unsigned 64-bit integer. */
        Out unsigned(long bits) {
            if (bits < 0) {
                bytes.write(0xcf);
                be(bits, 8);
                return this;
            }
            return integer(bits);
        }

        Out integer(long v) {
            if (v >= 0) {
                if (v < 128) {
                    bytes.write((int) v);
                } else if (v < 1L << 8) {
                    bytes.write(0xcc);
                    be(v, 1);
                } else if (v < 1L << 16) {
                    bytes.write(0xcd);
                    be(v, 2);
                } else if (v < 1L << 32) {
                    bytes.write(0xce);
                    be(v, 4);
                } else {
                    bytes.write(0xcf);
                    be(v, 8);
                }
            } else if (v >= -32) {
                bytes.write((int) (v & 0xff));
            } else if (v >= Byte.MIN_VALUE) {
                bytes.write(0xd0);
                be(v, 1);
            } else if (v >= Short.MIN_VALUE) {
                bytes.write(0xd1);
                be(v, 2);
            } else if (v >= Integer.MIN_VALUE) {
                bytes.write(0xd2);
                be(v, 4);
            } else {
                bytes.write(0xd3);
                be(v, 8);
            }
            return this;
        }

        Out float64(double v) {
            bytes.write(0xcb);
            be(Double.doubleToLongBits(v), 8);
            return this;
        }

        Out nil() {
            bytes.write(0xc0);
            return this;
        }

        Out str(String s) {
            byte[] utf8 = s.getBytes(StandardCharsets.UTF_8);
            int n = utf8.length;
            if (n < 32) {
                bytes.write(0xa0 | n);
            } else if (n < 1 << 8) {
                bytes.write(0xd9);
                be(n, 1);
            } else if (n < 1 << 16) {
                bytes.write(0xda);
                be(n, 2);
            } else {
                bytes.write(0xdb);
                be(n, 4);
            }
            bytes.writeBytes(utf8);
            return this;
        }

        private void be(long v, int width) {
            for (int i = width - 1; i >= 0; i--) {
                bytes.write((int) (v >>> (8 * i)) & 0xff);
            }
        }

        byte[] bytes() {
            return bytes.toByteArray();
        }
    }
}
