package lmcache4j.server.lm;

import java.io.IOException;
import java.nio.ByteBuffer;

import lmcache4j.engine.remote.lm.LmProtocol;
import lmcache4j.engine.remote.lm.LmProtocol.ProtocolException;
import lmcache4j.engine.remote.lm.PayloadTag;

/**
 * A PUT's payload as the store reads it. On a connection with a session, the tag that follows the
 * payload is read and checked inside the read that completes the payload, so a payload that fails
 * its tag fails that read and the store drops what it had taken before anything is published. A
 * payload the store skips (refused) has its tag skipped too.
 */
final class TaggedPayload implements LmChunkStore.PayloadSource {
    private final ServerConnection connection;
    private final String key;
    private final PayloadTag.Message tag;
    private long left;
    private boolean trailerDone;

    /** @param tag the message tag over the PUT's header so far, or null on a connection without a session */
    TaggedPayload(ServerConnection connection, String key, int length, PayloadTag.Message tag) throws IOException {
        this.connection = connection;
        this.key = key;
        this.tag = tag;
        this.left = length;
        this.trailerDone = tag == null;
        if (length == 0) {
            finishTrailer(true); // nothing will be read: check the tag before the store commits an empty entry
        }
    }

    @Override
    public void readFully(ByteBuffer dst) throws IOException {
        int from = dst.position();
        if (dst.remaining() > left) {
            throw new IllegalStateException("the store read past the payload of " + key);
        }
        LmProtocol.readFully(connection, dst);
        if (tag != null) {
            tag.update(dst.duplicate().limit(dst.position()).position(from));
        }
        left -= dst.position() - from;
        if (left == 0) {
            finishTrailer(true);
        }
    }

    @Override
    public void skip(long bytes) throws IOException {
        if (bytes > left) {
            throw new IllegalStateException("the store skipped past the payload of " + key);
        }
        LmProtocol.skipFully(connection, bytes);
        left -= bytes;
        if (left == 0) {
            finishTrailer(false);
        }
    }

    /** Fails when the store returned without consuming the whole payload (the stream would be out of step). */
    void requireConsumed() {
        if (left != 0 || !trailerDone) {
            throw new IllegalStateException("the store left " + left + " bytes of the payload of " + key + " unread");
        }
    }

    private void finishTrailer(boolean check) throws IOException {
        if (trailerDone) {
            return;
        }
        trailerDone = true;
        byte[] received = LmProtocol.readFully(connection, PayloadTag.BYTES);
        if (check && !tag.verify(received)) {
            throw new ProtocolException("PUT of " + key + " fails its tag (altered in transit, or not from a holder"
                    + " of the token)");
        }
    }
}
