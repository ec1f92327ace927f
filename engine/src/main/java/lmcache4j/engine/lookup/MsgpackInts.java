package lmcache4j.engine.lookup;

import java.io.ByteArrayOutputStream;

/**
 * A msgpack array of integers, the one msgpack shape the lookup service carries, written as
 * msgpack-python and msgspec write it (smallest array header, smallest integer format: positive
 * fixint, then uint8/16/32/64) and read strictly: every format checked, every length checked
 * against the bytes left before anything is allocated, nothing after the array.
 */
final class MsgpackInts {
    private MsgpackInts() {
    }

    /** {@code values}, each read as an unsigned 64-bit integer (a Python int in [0, 2^64)). */
    static byte[] encodeUnsigned(long[] values) {
        ByteArrayOutputStream out = new ByteArrayOutputStream(5 + 9 * values.length);
        int n = values.length;
        if (n <= 15) {
            out.write(0x90 | n);
        } else if (n <= 0xffff) {
            out.write(0xdc);
            writeBigEndian(out, n, 2);
        } else {
            out.write(0xdd);
            writeBigEndian(out, n, 4);
        }
        for (long v : values) {
            if (v >= 0 && v <= 0x7f) {
                out.write((int) v);
            } else if (v >= 0 && v <= 0xff) {
                out.write(0xcc);
                writeBigEndian(out, v, 1);
            } else if (v >= 0 && v <= 0xffff) {
                out.write(0xcd);
                writeBigEndian(out, v, 2);
            } else if (v >= 0 && v <= 0xffff_ffffL) {
                out.write(0xce);
                writeBigEndian(out, v, 4);
            } else {
                out.write(0xcf); // includes values >= 2^63, whose bits make a negative long
                writeBigEndian(out, v, 8);
            }
        }
        return out.toByteArray();
    }

    /**
     * The integers of a msgpack array, as 64-bit patterns: signed formats sign-extended, uint64
     * taken bit for bit.
     *
     * @param what what the frame holds, for error messages
     */
    static long[] decode(byte[] frame, String what) throws MalformedLookupMessageException {
        Reader in = new Reader(frame, what);
        int head = in.u8("the array header");
        long count;
        if ((head & 0xf0) == 0x90) {
            count = head & 0x0f;
        } else if (head == 0xdc) {
            count = in.big(2, "the array length");
        } else if (head == 0xdd) {
            count = in.big(4, "the array length");
        } else {
            throw new MalformedLookupMessageException(what + ": expected a msgpack array, found format byte 0x"
                    + Integer.toHexString(head));
        }
        if (count > in.left()) { // every element takes at least one byte
            throw new MalformedLookupMessageException(what + ": the array claims " + count + " elements but only "
                    + in.left() + " bytes follow");
        }
        long[] values = new long[(int) count];
        for (int i = 0; i < values.length; i++) {
            String element = "element " + i;
            int f = in.u8(element);
            values[i] = switch (f) {
                case 0xcc -> in.big(1, element);
                case 0xcd -> in.big(2, element);
                case 0xce -> in.big(4, element);
                case 0xcf -> in.big(8, element);
                case 0xd0 -> (byte) in.big(1, element);
                case 0xd1 -> (short) in.big(2, element);
                case 0xd2 -> (int) in.big(4, element);
                case 0xd3 -> in.big(8, element);
                default -> {
                    if (f <= 0x7f) {
                        yield f;
                    }
                    if (f >= 0xe0) {
                        yield (byte) f; // negative fixint
                    }
                    throw new MalformedLookupMessageException(what + ", " + element + ": expected a msgpack integer, "
                            + "found format byte 0x" + Integer.toHexString(f));
                }
            };
        }
        if (in.left() != 0) {
            throw new MalformedLookupMessageException(what + ": " + in.left() + " bytes after the array");
        }
        return values;
    }

    private static void writeBigEndian(ByteArrayOutputStream out, long v, int bytes) {
        for (int shift = 8 * (bytes - 1); shift >= 0; shift -= 8) {
            out.write((int) (v >>> shift) & 0xff);
        }
    }

    private static final class Reader {
        private final byte[] bytes;
        private final String what;
        private int at;

        Reader(byte[] bytes, String what) {
            this.bytes = bytes;
            this.what = what;
        }

        int left() {
            return bytes.length - at;
        }

        int u8(String field) throws MalformedLookupMessageException {
            return (int) big(1, field);
        }

        long big(int n, String field) throws MalformedLookupMessageException {
            if (left() < n) {
                throw new MalformedLookupMessageException(what + ": the frame ends inside " + field);
            }
            long v = 0;
            for (int i = 0; i < n; i++) {
                v = (v << 8) | (bytes[at++] & 0xff);
            }
            return v;
        }
    }
}
