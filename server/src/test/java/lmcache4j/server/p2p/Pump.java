package lmcache4j.server.p2p;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;

import lmcache4j.engine.remote.lm.LmProtocol;

/** One direction of a test's man in the middle: copies bytes until either side hangs up, then closes both. */
final class Pump {
    private Pump() {
    }

    static void copy(SocketChannel from, SocketChannel to) {
        try (from; to) {
            ByteBuffer b = ByteBuffer.allocate(64 * 1024);
            while (from.read(b.clear()) > 0) {
                LmProtocol.writeFully(to, b.flip());
            }
        } catch (IOException ignored) {
            // either side hung up
        }
    }
}
