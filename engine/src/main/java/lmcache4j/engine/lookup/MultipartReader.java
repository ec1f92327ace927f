package lmcache4j.engine.lookup;

import java.util.ArrayList;
import java.util.List;

import org.zeromq.ZMQ;

/**
 * Reads one multipart message from a socket with a receive timeout, keeping at most a bounded
 * number of frames: the rest of an oversized message is read and dropped, so the next message
 * starts clean, and the caller sees more frames than it allows (and rejects the message).
 */
public final class MultipartReader {
    private MultipartReader() {
    }

    /**
     * The frames of the next message, or null when none arrived within the socket's receive
     * timeout. Keeps at most {@code maxFrames + 1} frames (one more than allowed, so a message that
     * is too long is still seen as too long).
     */
    public static List<byte[]> read(ZMQ.Socket socket, int maxFrames) {
        byte[] first = socket.recv(0);
        if (first == null) {
            return null;
        }
        List<byte[]> frames = new ArrayList<>(Math.min(maxFrames + 1, 16));
        frames.add(first);
        while (socket.hasReceiveMore()) {
            byte[] part = socket.recv(0);
            if (part != null && frames.size() <= maxFrames) {
                frames.add(part);
            }
        }
        return frames;
    }
}
