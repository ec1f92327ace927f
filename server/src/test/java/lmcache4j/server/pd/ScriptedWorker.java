package lmcache4j.server.pd;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

import lmcache4j.engine.pd.wire.PdConnection;
import lmcache4j.engine.pd.wire.PdMessages;
import lmcache4j.engine.pd.wire.ProxyNotif;

/**
 * A PD role without a model, served by a real {@link PdWorkerServer}, for the proxy's routing and
 * fault tests (the model's own PD path is {@code PdThroughJlamaTest}'s): what each call does is set
 * per test; a prefiller's notices go over a real keyed connection to the proxy's notice port.
 */
final class ScriptedWorker implements PdWorkerServer.Worker, AutoCloseable {
    /** The vocabulary {@link #echo} draws from. */
    static final int VOCABULARY = 32_000;

    private final String role;
    private final PdWorkerServer server;
    final AtomicInteger prefills = new AtomicInteger();
    final AtomicInteger decodes = new AtomicInteger();
    final AtomicInteger statusCalls = new AtomicInteger();
    /** The proxy's notice port, once it runs: where {@link #noticeEveryRank} sends. */
    volatile int noticePort;
    volatile Function<PdWorkerApi.PrefillCall, PdWorkerApi.PrefillReply> onPrefill = this::noticeEveryRank;
    volatile Function<PdWorkerApi.DecodeCall, PdWorkerApi.DecodeReply> onDecode = ScriptedWorker::echo;
    volatile Map<String, Object> extraStatus = Map.of();

    private ScriptedWorker(String role) throws IOException {
        this.role = role;
        this.server = PdWorkerServer.start(new InetSocketAddress("127.0.0.1", 0), 4, this,
                Optional.of(PdNoticeServerTest.TOKEN));
    }

    static ScriptedWorker prefiller() throws IOException {
        return new ScriptedWorker("prefiller");
    }

    /** A decoder whose {@code /status} names {@code ranks} ranks' PD ports. */
    static ScriptedWorker decoder(int ranks) throws IOException {
        ScriptedWorker w = new ScriptedWorker("decoder");
        w.extraStatus = receiverStatus(ranks);
        return w;
    }

    static Map<String, Object> receiverStatus(int ranks) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("pd_peer_host", "127.0.0.1");
        m.put("pd_peer_init_port", java.util.stream.LongStream.range(0, ranks).mapToObj(i -> (Object) (7_000 + i)).toList());
        m.put("pd_peer_alloc_port", java.util.stream.LongStream.range(0, ranks).mapToObj(i -> (Object) (7_100 + i)).toList());
        return m;
    }

    int port() {
        return server.address().getPort();
    }

    /** Calls its server is serving now. */
    int inFlight() {
        return server.inFlight();
    }

    /** {@code host:port}, as the proxy names it. */
    String address() {
        return "127.0.0.1:" + server.address().getPort();
    }

    @Override
    public String role() {
        return role;
    }

    @Override
    public PdWorkerApi.PrefillReply prefill(PdWorkerApi.PrefillCall call) {
        if (!role.equals("prefiller")) {
            throw new UnsupportedOperationException("POST /prefill is a prefiller's");
        }
        prefills.incrementAndGet();
        return onPrefill.apply(call);
    }

    @Override
    public PdWorkerApi.DecodeReply decode(PdWorkerApi.DecodeCall call) {
        if (!role.equals("decoder")) {
            throw new UnsupportedOperationException("POST /decode is a decoder's");
        }
        decodes.incrementAndGet();
        return onDecode.apply(call);
    }

    @Override
    public Map<String, Object> status() {
        statusCalls.incrementAndGet();
        return extraStatus;
    }

    /** What a prefiller does when its push is done: one ready notice per decoder rank, each counted. */
    PdWorkerApi.PrefillReply noticeEveryRank(PdWorkerApi.PrefillCall call) {
        if (noticePort == 0) { // no proxy to tell
            return pushedNothing(call);
        }
        boolean counted = true;
        for (int i = 0; i < call.receiver().ranks(); i++) {
            counted &= notice(noticePort, PdNoticeServerTest.TOKEN, call.reqId());
        }
        return new PdWorkerApi.PrefillReply(call.reqId(), 0, 0, 0, 0, 0, Optional.empty(), counted, 1.0, 0.0);
    }

    /** A prefill that pushed nothing and sent no notice. */
    static PdWorkerApi.PrefillReply pushedNothing(PdWorkerApi.PrefillCall call) {
        return new PdWorkerApi.PrefillReply(call.reqId(), 0, 0, 0, 0, 0, Optional.empty(), false, 1.0, 0.0);
    }

    /** The tokens a decoder "generates" for {@code call}: a function of the prompt, so any mix-up shows. */
    static int[] expectedTokens(int[] prompt, int count) {
        long sum = 0;
        for (int t : prompt) {
            sum = sum * 31 + t;
        }
        int[] out = new int[count];
        for (int i = 0; i < count; i++) {
            out[i] = (int) Math.floorMod(sum + i * 7919L, VOCABULARY);
        }
        return out;
    }

    static PdWorkerApi.DecodeReply echo(PdWorkerApi.DecodeCall call) {
        int[] tokens = expectedTokens(call.tokens(), call.maxTokens());
        double[] times = new double[tokens.length];
        return new PdWorkerApi.DecodeReply(tokens, 0, call.tokens().length, 1.0, 2.0, times, Optional.empty());
    }

    /** Sends {@code reqId}'s ready notice to the proxy's notice port as a prefiller does; true when it was counted. */
    static boolean notice(int noticePort, byte[] token, String reqId) {
        try (PdConnection c = PdConnection.connect("127.0.0.1", noticePort, token, Duration.ofSeconds(5), 4_096)) {
            c.sendMessage(PdMessages.encode(new ProxyNotif(reqId)));
            return ((PdConnection.Ack) c.receive()).status() == PdConnection.OK;
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    @Override
    public void close() {
        server.close();
    }
}
