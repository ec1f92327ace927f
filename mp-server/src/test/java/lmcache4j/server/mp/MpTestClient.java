package lmcache4j.server.mp;

import java.util.ArrayList;
import java.util.List;
import java.util.OptionalInt;

import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

import lmcache4j.server.mp.wire.IpcCacheServerKey;
import lmcache4j.server.mp.wire.MpKeyCodec;
import lmcache4j.server.mp.wire.MpRegistrationCodec;
import lmcache4j.server.mp.wire.MpScalars;
import lmcache4j.server.mp.wire.MpSchema;
import lmcache4j.server.mp.wire.RegisterEngineDrivenContextPayload;
import lmcache4j.server.mp.wire.RegisterEngineDrivenContextResponse;
import lmcache4j.engine.zmq.OwnedZContext;

/** A DEALER that sends the frames LMCache's MP client sends (built with the wire codecs), for tests. */
final class MpTestClient implements AutoCloseable {
    static final String MODEL = "test/model";
    private final ZContext context = new OwnedZContext("test-mp-test-client", 1);
    final ZMQ.Socket dealer;
    private int uid;

    /** Replies are awaited this long: far above a loaded machine's round trip. */
    private static final int REPLY_MILLIS = 10_000;

    MpTestClient(MpServer server) {
        dealer = context.createSocket(SocketType.DEALER);
        dealer.setLinger(0);
        dealer.connect("tcp://127.0.0.1:" + server.port());
    }

    /** The reply's frames after uid and op (empty for None), or null when none came in 10 s. */
    List<byte[]> call(int op, byte[]... args) {
        return callWithin(REPLY_MILLIS, op, args);
    }

    /** As {@link #call}, waiting {@code millis} (for requests the server must drop). */
    List<byte[]> callWithin(int millis, int op, byte[]... args) {
        dealer.setReceiveTimeOut(millis);
        int id = uid++;
        List<byte[]> frames = new ArrayList<>();
        frames.add(MpScalars.encodeInt(id));
        frames.add(MpScalars.encodeInt(op));
        frames.addAll(List.of(args));
        sendRaw(frames);
        return receive(id);
    }

    void sendRaw(List<byte[]> frames) {
        for (int i = 0; i < frames.size(); i++) {
            dealer.send(frames.get(i), i < frames.size() - 1 ? ZMQ.SNDMORE : 0);
        }
    }

    /** The result frames of the reply to {@code id}, skipping late replies to earlier calls; null on timeout. */
    List<byte[]> receive(int id) {
        while (true) {
            byte[] first = dealer.recv(0);
            if (first == null) {
                return null;
            }
            List<byte[]> reply = new ArrayList<>();
            while (dealer.hasReceiveMore()) {
                reply.add(dealer.recv(0));
            }
            if (java.util.Arrays.equals(first, MpScalars.encodeInt(id))) {
                return reply.subList(1, reply.size()); // after op
            }
        }
    }

    boolean ping() {
        List<byte[]> r = call(22, MpScalars.encodeNil());
        return r != null && r.size() == 1 && java.util.Arrays.equals(r.get(0), MpScalars.encodeBool(true));
    }

    RegisterEngineDrivenContextResponse register(long instanceId) throws Exception {
        return register(instanceId, 1);
    }

    /** Registers an instance of {@code worldSize} tensor-parallel ranks (2 layers, 64 elements a token, bf16). */
    RegisterEngineDrivenContextResponse register(long instanceId, int worldSize) throws Exception {
        byte[] payload = MpRegistrationCodec.encodePayload(RegisterEngineDrivenContextPayload.singleGroup(instanceId, MODEL,
                worldSize, 16, 2, 64, "bfloat16", false), MpSchema.BASE);
        return MpRegistrationCodec.decodeResponse(call(14, payload).get(0));
    }

    static byte[] key(int[] tokens, int start, int end, String requestId, OptionalInt worker) {
        return key(tokens, start, end, requestId, worker, 1);
    }

    /** A key of a world of {@code worldSize} ranks: a worker's (one rank) or, without a worker id, the scheduler's (all). */
    static byte[] key(int[] tokens, int start, int end, String requestId, OptionalInt worker, int worldSize) {
        return MpKeyCodec.encode(new IpcCacheServerKey(MODEL, worldSize, worker, tokens, start, end, requestId, "", 0),
                MpSchema.BASE);
    }

    static int[] tokens(int seed, int n) {
        int[] t = new int[n];
        for (int i = 0; i < n; i++) {
            t[i] = (i * 7919 + seed * 104729) % 128_000;
        }
        return t;
    }

    @Override
    public void close() {
        context.close();
    }
}
