package lmcache4j.engine.controller.message;

/**
 * Makes msgpack-core use its ByteBuffer-backed buffers instead of {@code sun.misc.Unsafe}.
 * Without it, the first message on Java 24+ prints the JDK's "terminally deprecated method in
 * sun.misc.Unsafe" warning, and a JVM run with {@code --sun-misc-unsafe-memory-access=deny}
 * fails. msgpack-core reads the property once, when its {@code MessageBuffer} class loads, so
 * this runs in the static initializers of the only two classes that touch msgpack-core. A value
 * the user set is left alone.
 */
final class UniversalBuffer {
    private static final String PROPERTY = "msgpack.universal-buffer";

    private UniversalBuffer() {
    }

    static void select() {
        if (System.getProperty(PROPERTY) == null) {
            System.setProperty(PROPERTY, "true");
        }
    }
}
