package lmcache4j.server.mp.wire;

import java.util.OptionalLong;

/**
 * The plain argument and result frames of LMCache's multiprocess protocol: ints, floats, strings,
 * bools, bytes and nil, read strictly (one value, nothing after it) and written as msgspec writes
 * them (docs/design/mp-server.md §2: {@code bool} and {@code int} results are coerced and written
 * plainly, {@code int | None} as an int or no frame at all).
 */
public final class MpScalars {
    private static final byte[] NIL = {(byte) 0xc0};
    private static final byte[] TRUE = {(byte) 0xc3};
    private static final byte[] FALSE = {(byte) 0xc2};

    private MpScalars() {
    }

    /** A bool result frame. */
    public static byte[] encodeBool(boolean value) {
        return (value ? TRUE : FALSE).clone();
    }

    /** An int result frame, in msgpack's smallest form. */
    public static byte[] encodeInt(long value) {
        return new MpWriter().integer(value).toByteArray();
    }

    /** A str result frame ({@code noop}'s {@code "OK"}). */
    public static byte[] encodeString(String value) {
        return new MpWriter().string(value).toByteArray();
    }

    /** A nil frame; results of {@code None} send no frame instead (§2). */
    public static byte[] encodeNil() {
        return NIL.clone();
    }

    /** A bytes frame ({@code commit_store}'s {@code data}, from a Java client). */
    public static byte[] encodeBytes(byte[] value) {
        return new MpWriter().binary(value).toByteArray();
    }

    /** A float frame (float64, as msgspec writes every float). */
    public static byte[] encodeFloat(double value) {
        return new MpWriter().float64(value).toByteArray();
    }

    /**
     * An int argument in {@code [min, max]}.
     *
     * @throws MpProtocolException {@link MpDropReason#BAD_ARGUMENT} for anything else
     */
    public static long decodeInt(byte[] frame, String what, long min, long max) throws MpProtocolException {
        try (MpReader in = MpReader.of(frame)) {
            long value = in.readLong(what, min, max);
            in.expectEnd(what);
            return value;
        }
    }

    /**
     * An {@code int | None} argument ({@code ping}'s instance id).
     *
     * @throws MpProtocolException {@link MpDropReason#BAD_ARGUMENT} for anything else
     */
    public static OptionalLong decodeOptionalInt(byte[] frame, String what, long min, long max)
            throws MpProtocolException {
        try (MpReader in = MpReader.of(frame)) {
            OptionalLong value = in.tryNil(what) ? OptionalLong.empty() : OptionalLong.of(in.readLong(what, min, max));
            in.expectEnd(what);
            return value;
        }
    }

    /**
     * A {@code float} argument, which msgspec also accepts as an int ({@code wait_prefetch_status}'s timeout).
     *
     * @throws MpProtocolException {@link MpDropReason#BAD_ARGUMENT} for anything else
     */
    public static double decodeNumber(byte[] frame, String what) throws MpProtocolException {
        try (MpReader in = MpReader.of(frame)) {
            double value = in.readNumber(what);
            in.expectEnd(what);
            return value;
        }
    }

    /**
     * A str argument of at most {@code maxBytes} bytes of UTF-8 ({@code request_id}).
     *
     * @throws MpProtocolException {@link MpDropReason#BAD_ARGUMENT} for anything else
     */
    public static String decodeString(byte[] frame, String what, int maxBytes) throws MpProtocolException {
        try (MpReader in = MpReader.of(frame)) {
            String value = in.readString(what, maxBytes);
            in.expectEnd(what);
            return value;
        }
    }

    /**
     * A bool argument ({@code clear}'s {@code force}).
     *
     * @throws MpProtocolException {@link MpDropReason#BAD_ARGUMENT} for anything else
     */
    public static boolean decodeBool(byte[] frame, String what) throws MpProtocolException {
        try (MpReader in = MpReader.of(frame)) {
            boolean value = in.readBool(what);
            in.expectEnd(what);
            return value;
        }
    }

    /**
     * A bytes argument of at most {@code maxBytes} bytes ({@code commit_store}'s {@code data}).
     *
     * @throws MpProtocolException {@link MpDropReason#BAD_ARGUMENT} for anything else
     */
    public static byte[] decodeBytes(byte[] frame, String what, int maxBytes) throws MpProtocolException {
        try (MpReader in = MpReader.of(frame)) {
            byte[] value = in.readBinary(what, maxBytes);
            in.expectEnd(what);
            return value;
        }
    }

    /**
     * Checks that a frame holds exactly one well-formed msgpack value of any type, for arguments
     * the server accepts and ignores ({@code end_session}'s {@code end_info},
     * {@code report_block_allocation}'s records).
     *
     * @throws MpProtocolException {@link MpDropReason#BAD_ARGUMENT} if it does not
     */
    public static void checkWellFormed(byte[] frame, String what) throws MpProtocolException {
        try (MpReader in = MpReader.of(frame)) {
            in.skipValue(what);
            in.expectEnd(what);
        }
    }
}
