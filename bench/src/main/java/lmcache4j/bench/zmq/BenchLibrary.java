package lmcache4j.bench.zmq;

/** A ZeroMQ implementation as the benchmark drives it: a context of one I/O thread and its sockets. */
interface BenchLibrary extends AutoCloseable {
    /** How the report names it: {@code jeromq}, {@code jeromq-as-shipped}, {@code libzmq}. */
    String name();

    /** The library and its version, for the report. */
    String describe();

    BenchSocket socket(Kind kind);

    /** Closes every socket still open and the context. */
    @Override
    void close();
}
