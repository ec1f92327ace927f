package lmcache4j.bench.zmq;

/** The socket types the benchmark uses, with each library's number for them (the same: ZMTP's). */
enum Kind {
    PUB(LibZmq.PUB), SUB(LibZmq.SUB), DEALER(LibZmq.DEALER), ROUTER(LibZmq.ROUTER), PULL(LibZmq.PULL), PUSH(LibZmq.PUSH);

    final int type;

    Kind(int type) {
        this.type = type;
    }
}
