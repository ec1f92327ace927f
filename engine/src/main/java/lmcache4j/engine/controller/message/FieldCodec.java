package lmcache4j.engine.controller.message;

/**
 * How one field's value is read from and written to msgpack.
 *
 * @param <T> the field's Java type
 */
interface FieldCodec<T> {
    /** Reads the value; {@code what} names the field in error messages. */
    T read(MsgReader in, String what) throws MalformedMessageException;

    /** Writes the value. */
    void write(MsgWriter out, T value);
}
