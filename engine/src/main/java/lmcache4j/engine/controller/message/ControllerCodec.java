package lmcache4j.engine.controller.message;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Objects;

/**
 * Encodes and decodes LMCache cache-controller messages exactly as LMCache's msgspec does
 * ({@code msgspec.msgpack} with {@code tag=True} structs): one msgpack map whose first entry is
 * {@code "type" -> class name}, then every field by name in declaration order, defaults included.
 *
 * <p>Decoding is strict and bounded: every declared length is checked against the bytes left in
 * the frame before anything is allocated, wrong types, missing required fields, duplicate fields
 * and trailing bytes are {@link MalformedMessageException}s, and a type name lmcache4j does not
 * know is an {@link UnknownMessageTypeException} (a subclass, so catch it first to count it apart).
 * Nothing else escapes {@link #decode}, whatever the bytes. Unknown fields are skipped, as msgspec
 * skips them. Stateless and thread safe.
 */
public final class ControllerCodec {
    private static final byte[][] TYPE_KEY = {MessageSchemas.TYPE.getBytes(StandardCharsets.UTF_8)};

    private ControllerCodec() {
    }

    /** The msgspec encoding of {@code message}. */
    @SuppressWarnings("unchecked")
    public static byte[] encode(ControllerMessage message) {
        Objects.requireNonNull(message, "message");
        StructSchema<ControllerMessage> schema =
                (StructSchema<ControllerMessage>) MessageSchemas.BY_CLASS.get(message.getClass());
        MsgWriter out = new MsgWriter();
        schema.write(out, message);
        return out.toByteArray();
    }

    /**
     * The message in {@code frame}.
     *
     * @throws UnknownMessageTypeException the frame is well formed up to a {@code "type"} lmcache4j does not know
     * @throws MalformedMessageException   anything else wrong with the frame
     */
    public static ControllerMessage decode(byte[] frame) throws MalformedMessageException {
        Objects.requireNonNull(frame, "frame");
        if (frame.length == 0) {
            throw new MalformedMessageException("empty frame");
        }
        try (MsgReader in = new MsgReader(frame)) {
            int entries = in.mapHeader("message");
            if (entries == 0 || in.key(TYPE_KEY, "message first key") != 0) {
                throw new MalformedMessageException("a message's first map entry must be \"type\" (msgspec writes the tag first)");
            }
            String tag = in.str("message type");
            StructSchema<? extends ControllerMessage> schema = MessageSchemas.BY_TAG.get(tag);
            if (schema == null) {
                throw new UnknownMessageTypeException(tag);
            }
            ControllerMessage message = schema.readFields(in, entries - 1);
            if (!in.atEnd()) {
                throw new MalformedMessageException(tag + ": " + in.remaining() + " trailing bytes after the message");
            }
            return message;
        } catch (RuntimeException e) {
            // A record's own precondition (none are expected past the checks above); still a bad frame.
            throw new MalformedMessageException("frame does not make a valid message: " + e, e);
        }
    }

    /** The wire names ({@code "type"} values) of every message this codec knows. */
    public static List<String> messageTypes() {
        return MessageSchemas.ALL.stream().map(s -> s.tag).toList();
    }
}
