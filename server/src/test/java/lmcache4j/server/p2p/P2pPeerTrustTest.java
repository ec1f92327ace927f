package lmcache4j.server.p2p;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.zip.CRC32C;

import lmcache4j.engine.LMCacheEngine;
import lmcache4j.engine.connector.PagedKvCache;
import lmcache4j.engine.p2p.ProbingPeerLocator;
import lmcache4j.engine.remote.lm.LmProtocol;
import lmcache4j.engine.remote.lm.LmSession;
import lmcache4j.server.lm.LmServerLimits;
import org.junit.jupiter.api.Test;

/**
 * The forged-peer attacks of issue #24, with the deployment's P2P token set: a squatter on the
 * address a peer is known by, and a man in the middle who rewrites a chunk together with its
 * CRC32C (what let an attacker feed a victim another prompt's KV before). The victim must retrieve
 * zero wrong bytes, and the squatter must learn neither the token nor a key.
 */
class P2pPeerTrustTest {
    private static final String SECRET = P2pEngines.SECRET;
    private static final Optional<String> TOKEN = P2pEngines.TOKEN;
    private static final InetAddress LOOPBACK = InetAddress.getLoopbackAddress();

    @Test
    void aSquatterOnAPeersAddressLearnsNothingAndServesNothing() throws Exception {
        int[] tokens = P2pEngines.tokens(5);
        long[] slots = P2pEngines.slots();
        ByteArrayOutputStream heard = new ByteArrayOutputStream();
        AtomicInteger hellos = new AtomicInteger();
        try (ServerSocketChannel squatter = ServerSocketChannel.open().bind(new InetSocketAddress(LOOPBACK, 0));
             Arena arena = Arena.ofShared()) {
            Thread.ofVirtual().start(() -> squat(squatter, heard, hellos));
            String url = "127.0.0.1:" + squatter.socket().getLocalPort();
            try (ProbingPeerLocator toSquatter = new ProbingPeerLocator(Map.of("A", url), TOKEN, Duration.ofSeconds(2));
                 LMCacheEngine b = P2pEngines.engine(P2pEngines.config(2_000), toSquatter, "B")) {
                assertEquals(0, b.lookup(tokens, Map.of(), null), "the squatter cannot prove it holds the token");
                PagedKvCache target = P2pEngines.cache(arena);
                assertFalse(b.retrieve(tokens, null, target, slots, Map.of(), null)[0]);
                assertEquals(-1, P2pEngines.firstDifferentLayer(P2pEngines.cache(arena), target), "not a byte written");
                String someKey = b.prepare(tokens, Map.of()).chunks().getFirst().key().toKeyString();
                String all;
                synchronized (heard) {
                    all = heard.toString(StandardCharsets.ISO_8859_1);
                }
                assertTrue(hellos.get() > 0, "B did try the squatter");
                assertFalse(all.contains(SECRET), "the token never crosses the wire");
                assertFalse(all.contains(someKey), "no key is sent before the server proves itself");
                assertEquals(hellos.get() * (LmProtocol.CLIENT_HEADER_BYTES + LmSession.HELLO_BYTES), all.length(),
                        "each connection sent its AUTH_HELLO and nothing else");
            }
        }
    }

    @Test
    void aManInTheMiddleWhoRewritesAChunkAndItsCrcGetsAMissNotWrongBytes() throws Exception {
        int[] tokens = P2pEngines.tokens(6);
        long[] slots = P2pEngines.slots();
        AtomicInteger rewritten = new AtomicInteger();
        try (Arena arena = Arena.ofShared();
             ProbingPeerLocator nobody = new ProbingPeerLocator(Map.of(), TOKEN, Duration.ofSeconds(2));
             LMCacheEngine a = P2pEngines.engine(P2pEngines.config(2_000), nobody, "A");
             P2pTransferServer served = P2pTransferServer.start(a, "127.0.0.1", 0, TOKEN, LmServerLimits.defaults());
             ServerSocketChannel proxy = ServerSocketChannel.open().bind(new InetSocketAddress(LOOPBACK, 0))) {
            PagedKvCache kv = P2pEngines.cache(arena);
            P2pEngines.fill(kv, tokens, slots);
            a.store(tokens, null, kv, slots, Map.of());
            Thread.ofVirtual().start(() -> relay(proxy, served.port(), rewritten));
            String url = "127.0.0.1:" + proxy.socket().getLocalPort();
            try (ProbingPeerLocator throughProxy = new ProbingPeerLocator(Map.of("A", url), TOKEN, Duration.ofSeconds(2));
                 LMCacheEngine b = P2pEngines.engine(P2pEngines.config(2_000), throughProxy, "B")) {
                assertEquals(P2pEngines.TOKENS, b.lookup(tokens, Map.of(), null), "the proxy passes the probes untouched");
                PagedKvCache target = P2pEngines.cache(arena);
                boolean[] loaded = b.retrieve(tokens, null, target, slots, Map.of(), null);
                assertTrue(rewritten.get() > 0, "the proxy rewrote a chunk and its CRC32C");
                assertFalse(loaded[0], "a chunk whose tag fails is a miss");
                assertEquals(-1, P2pEngines.firstDifferentLayer(P2pEngines.cache(arena), target),
                        "zero wrong bytes retrieved");
                assertEquals(0, P2pEngines.p2pTier(b).stats().hits());
            }
        }
    }

    @Test
    void anOutsiderThatIgnoresTheFailOfItsWrongProofReadsNoChunk() throws Exception {
        int[] tokens = P2pEngines.tokens(7);
        long[] slots = P2pEngines.slots();
        try (Arena arena = Arena.ofShared();
             ProbingPeerLocator nobody = new ProbingPeerLocator(Map.of(), TOKEN, Duration.ofSeconds(2));
             LMCacheEngine a = P2pEngines.engine(P2pEngines.config(2_000), nobody, "A");
             P2pTransferServer served = P2pTransferServer.start(a, "127.0.0.1", 0, TOKEN,
                     LmServerLimits.defaults().withAuthFailureDelay(Duration.ofMillis(10)))) {
            PagedKvCache kv = P2pEngines.cache(arena);
            P2pEngines.fill(kv, tokens, slots);
            a.store(tokens, null, kv, slots, Map.of());
            String key = a.prepare(tokens, Map.of()).chunks().getFirst().key().toKeyString();
            try (SocketChannel ch = SocketChannel.open(new InetSocketAddress(LOOPBACK, served.port()))) {
                LmProtocol.writeFully(ch, ByteBuffer.wrap(LmProtocol.encodeClient(LmProtocol.AUTH_HELLO,
                        LmSession.NONCE_BYTES, "")), ByteBuffer.wrap(LmSession.nonce()));
                LmProtocol.readFully(ch, LmProtocol.SERVER_HEADER_BYTES + LmSession.NONCE_BYTES + LmSession.PROOF_BYTES);
                byte[] guess = "a guessed proof of the token....".getBytes(StandardCharsets.US_ASCII);
                LmProtocol.writeFully(ch, ByteBuffer.wrap(LmProtocol.encodeClient(LmProtocol.AUTH_PROOF,
                        LmSession.PROOF_BYTES, "")), ByteBuffer.wrap(java.util.Arrays.copyOf(guess, LmSession.PROOF_BYTES)));
                assertEquals(LmProtocol.FAIL, LmProtocol.replyCode(LmProtocol.readFully(ch, LmProtocol.SERVER_HEADER_BYTES)));
                try { // as if it had passed: a GET of a chunk the engine holds
                    LmProtocol.writeFully(ch, ByteBuffer.wrap(LmProtocol.encodeClient(LmProtocol.GET, 0, key)));
                } catch (IOException closed) {
                    // the peer closed the connection already
                }
                ch.socket().setSoTimeout(10_000);
                long sent = 0;
                try (var in = ch.socket().getInputStream()) {
                    for (int n; (n = in.read(new byte[4096])) > 0; ) {
                        sent += n;
                    }
                } catch (IOException closed) {
                    // reset: closed
                }
                assertEquals(0, sent, "bytes the peer sent after its FAIL: the outsider's GET must not be served");
            }
        }
    }

    /** Answers every AUTH_HELLO with a made-up nonce and proof, recording every byte it is sent. */
    private static void squat(ServerSocketChannel squatter, ByteArrayOutputStream heard, AtomicInteger hellos) {
        while (squatter.isOpen()) {
            try {
                SocketChannel c = squatter.accept();
                Thread.ofVirtual().start(() -> {
                    try (c) {
                        ByteBuffer in = ByteBuffer.allocate(64 * 1024);
                        boolean answered = false;
                        int n;
                        while ((n = c.read(in.clear())) > 0) {
                            synchronized (heard) {
                                heard.write(in.array(), 0, n);
                            }
                            if (!answered) {
                                answered = true;
                                hellos.incrementAndGet();
                                LmProtocol.writeFully(c, ByteBuffer.wrap(LmProtocol.encodeServer(LmProtocol.SUCCESS, 64)),
                                        ByteBuffer.wrap(LmSession.nonce()), ByteBuffer.wrap(LmSession.nonce()));
                            }
                        }
                    } catch (IOException ignored) {
                        // the victim hung up
                    }
                });
            } catch (IOException e) {
                return; // closed
            }
        }
    }

    /** Relays to the real peer, flipping a byte of every GET payload and fixing the CRC32C in its header. */
    private static void relay(ServerSocketChannel proxy, int peerPort, AtomicInteger rewritten) {
        while (proxy.isOpen()) {
            try {
                SocketChannel client = proxy.accept();
                SocketChannel peer = SocketChannel.open(new InetSocketAddress(LOOPBACK, peerPort));
                Thread.ofVirtual().start(() -> Pump.copy(client, peer));
                Thread.ofVirtual().start(() -> tamper(peer, client, rewritten));
            } catch (IOException e) {
                return;
            }
        }
    }

    /** The peer's replies, parsed: the handshake's two, then headers with their payload, CRC32C and tag. */
    private static void tamper(SocketChannel peer, SocketChannel client, AtomicInteger rewritten) {
        try (peer; client) {
            byte[] hello = LmProtocol.readFully(peer, LmProtocol.SERVER_HEADER_BYTES + LmSession.ANSWER_BYTES);
            LmProtocol.writeFully(client, ByteBuffer.wrap(hello));
            while (true) {
                byte[] header = LmProtocol.readFully(peer, LmProtocol.SERVER_HEADER_BYTES);
                int length = LmProtocol.replyLength(header);
                if (LmProtocol.replyCode(header) != LmProtocol.SUCCESS || length == 0) {
                    LmProtocol.writeFully(client, ByteBuffer.wrap(header));
                    continue;
                }
                byte[] payload = LmProtocol.readFully(peer, length);
                byte[] tag = LmProtocol.readFully(peer, LmSession.TAG_BYTES);
                payload[length / 2] ^= 0x5a;
                CRC32C crc = new CRC32C();
                crc.update(payload);
                ByteBuffer.wrap(header).order(ByteOrder.LITTLE_ENDIAN)
                        .putInt(LmProtocol.SERVER_HEADER_BYTES - 4, (int) crc.getValue());
                rewritten.incrementAndGet();
                LmProtocol.writeFully(client, ByteBuffer.wrap(header), ByteBuffer.wrap(payload), ByteBuffer.wrap(tag));
            }
        } catch (IOException ignored) {
            // either side hung up
        }
    }
}
