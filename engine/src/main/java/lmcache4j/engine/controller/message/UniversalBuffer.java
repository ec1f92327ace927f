package lmcache4j.engine.controller.message;

/**
 * Makes msgpack-core use its ByteBuffer-backed buffers instead of {@code sun.misc.Unsafe}.
 * Without it, the first message on Java 24+ prints the JDK's "terminally deprecated method in
 * sun.misc.Unsafe" warning, and a JVM run with {@code --sun-misc-unsafe-memory-access=deny}
 * fails. msgpack-core reads the property once, when its {@code MessageBuffer} class loads, so
 * this runs in the static initializers of every class that touches msgpack-core (the controller's
 * messages here, the MP server's frames in lmcache4j.server). A value the user set is left alone.
 */
public final class UniversalBuffer {
    private static final String PROPERTY = "msgpack.universal-buffer";

    private UniversalBuffer() {
    }

    /** Selects msgpack-core's ByteBuffer-backed buffers unless the user chose; call before msgpack-core's first use. */
    public static void select() {
        if (System.getProperty(PROPERTY) == null) {
            System.setProperty(PROPERTY, "true");
        }
    }
}
