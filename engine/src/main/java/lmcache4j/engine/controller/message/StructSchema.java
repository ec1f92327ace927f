package lmcache4j.engine.controller.message;

import java.nio.charset.StandardCharsets;
import java.util.Objects;
import java.util.function.Function;

/**
 * The msgspec layout of one struct: its tag (for tagged structs), its fields in declaration order
 * (inherited first) with their codecs and defaults, and how to build the record from the decoded
 * values and take them apart again. Unknown fields are skipped (msgspec's default); duplicate or
 * missing required fields are malformed.
 *
 * @param <T> the record
 */
final class StructSchema<T> {
    /** One field: its wire name, codec, and default (when it has one). */
    record Field(String name, FieldCodec<?> codec, boolean hasDefault, Object defaultValue) {
        static Field required(String name, FieldCodec<?> codec) {
            return new Field(name, codec, false, null);
        }

        static Field withDefault(String name, FieldCodec<?> codec, Object defaultValue) {
            return new Field(name, codec, true, defaultValue);
        }
    }

    /** Builds the record from its decoded field values, in declaration order. */
    interface Builder<T> {
        T build(Object[] values) throws MalformedMessageException;
    }

    final String tagField;
    final String tag;
    final Class<T> type;
    private final Field[] fields;
    private final byte[][] names;
    private final Builder<T> builder;
    private final Function<T, Object[]> values;

    private StructSchema(String tagField, String tag, Class<T> type, Builder<T> builder,
                         Function<T, Object[]> values, Field... fields) {
        this.tagField = tagField;
        this.tag = tag;
        this.type = type;
        this.fields = fields;
        this.builder = builder;
        this.values = values;
        this.names = new byte[fields.length][];
        for (int i = 0; i < fields.length; i++) {
            names[i] = fields[i].name().getBytes(StandardCharsets.UTF_8);
        }
    }

    /** A tagged struct: a map whose first entry is {@code tagField -> tag}. */
    static <T> StructSchema<T> tagged(String tagField, String tag, Class<T> type, Builder<T> builder,
                                      Function<T, Object[]> values, Field... fields) {
        return new StructSchema<>(Objects.requireNonNull(tagField), Objects.requireNonNull(tag), type, builder,
                values, fields);
    }

    /** An untagged struct: a map of its fields. */
    static <T> StructSchema<T> untagged(Class<T> type, Builder<T> builder, Function<T, Object[]> values,
                                        Field... fields) {
        return new StructSchema<>(null, null, type, builder, values, fields);
    }

    String displayName() {
        return tag != null ? tag : type.getSimpleName();
    }

    /** Reads {@code entries} map entries (after the tag, if any) and builds the record. */
    T readFields(MsgReader in, int entries) throws MalformedMessageException {
        Object[] decoded = new Object[fields.length];
        boolean[] seen = new boolean[fields.length];
        String where = displayName();
        for (int e = 0; e < entries; e++) {
            int i = in.key(names, where + " field name");
            if (i < 0) {
                in.skip(where + " unknown field");
                continue;
            }
            if (seen[i]) {
                throw new MalformedMessageException(where + ": field '" + fields[i].name() + "' appears twice");
            }
            seen[i] = true;
            decoded[i] = fields[i].codec().read(in, where + "." + fields[i].name());
        }
        for (int i = 0; i < fields.length; i++) {
            if (!seen[i]) {
                if (!fields[i].hasDefault()) {
                    throw new MalformedMessageException(where + ": missing required field '" + fields[i].name() + "'");
                }
                decoded[i] = fields[i].defaultValue();
            }
        }
        return builder.build(decoded);
    }

    /** Writes the whole struct: map header, tag, then every field (defaults included, as msgspec does). */
    @SuppressWarnings({"unchecked", "rawtypes"})
    void write(MsgWriter out, T value) {
        Object[] v = values.apply(value);
        out.mapHeader(fields.length + (tag != null ? 1 : 0));
        if (tag != null) {
            out.str(tagField).str(tag);
        }
        for (int i = 0; i < fields.length; i++) {
            out.str(fields[i].name());
            ((FieldCodec) fields[i].codec()).write(out, v[i]);
        }
    }
}
