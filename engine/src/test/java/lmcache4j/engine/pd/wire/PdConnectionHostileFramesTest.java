package lmcache4j.engine.pd.wire;

import static lmcache4j.engine.pd.wire.PdConnectionTest.random;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.function.UnaryOperator;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import lmcache4j.engine.remote.lm.LmProtocol;
import lmcache4j.engine.remote.lm.LmSession;

/**
 * What a PD connection does with frames an attacker or a broken peer sends: a frame longer than the
 * connection takes, of an unknown kind, an acknowledgement or a chunk of the wrong size, is refused
 * before its body is read; a frame repeated, reordered or altered on the wire fails its tag (each
 * tag covers a message number both sides count); a chunk that is skipped still has its tag checked,
 * and is given up on when its bytes stop coming;
 * and a socket with no channel (one a plain {@code ServerSocket} accepted) speaks the same frames
 * through its streams.
 */
class PdConnectionHostileFramesTest {
    private static final byte[] TOKEN = "pd-hostile-frames-test-token-0123456789".getBytes(StandardCharsets.UTF_8);
    private static final Duration TIMEOUT = Duration.ofMillis(2_000);
    private static final int MAX_BODY = 1_024;
    private static final Duration BOUND = Duration.ofSeconds(10);
    private static final int HANDSHAKE_BYTES = 2 * LmProtocol.CLIENT_HEADER_BYTES + LmSession.HELLO_BYTES
            + LmSession.PROOF_BYTES;

    /** An unkeyed server end and the raw socket that feeds it hand-made frames. */
    private record Raw(SocketChannel raw, PdConnection server) implements AutoCloseable {
        void send(int bodyBytes, byte kind, byte[] body) throws IOException {
            ByteBuffer b = ByteBuffer.allocate(5 + body.length).putInt(bodyBytes).put(kind).put(body).flip();
            while (b.hasRemaining()) {
                raw.write(b);
            }
        }

        @Override
        public void close() throws IOException {
            raw.close();
            server.close();
        }
    }

    private static Raw raw(int maxBody) throws IOException {
        try (ServerSocketChannel listener = ServerSocketChannel.open()
                .bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))) {
            SocketChannel raw = SocketChannel.open(listener.getLocalAddress());
            return new Raw(raw, PdConnection.unkeyedForBenchmark(listener.accept().socket(), TIMEOUT, maxBody));
        }
    }

    private static <T extends Throwable> T refused(Class<T> type, Raw r) {
        return assertTimeoutPreemptively(BOUND, () -> assertThrows(type, () -> r.server().receive()));
    }

    @Test
    void aFrameOfExactlyTheLimitIsReadAndOneByteMoreIsRefusedBeforeItsBody() throws Exception {
        try (Raw r = raw(MAX_BODY)) {
            byte[] body = new byte[MAX_BODY];
            body[MAX_BODY - 1] = 42;
            r.send(MAX_BODY, PdConnection.MESSAGE, body);
            assertArrayEquals(body, ((PdConnection.Message) r.server().receive()).body());
            r.send(MAX_BODY + 1, PdConnection.MESSAGE, new byte[0]); // no body follows: a refusal must not wait for one
            PdProtocolException e = refused(PdProtocolException.class, r);
            assertTrue(e.getMessage().contains((MAX_BODY + 1) + " bytes") && e.getMessage().contains(MAX_BODY + " this"),
                    e.getMessage());
        }
    }

    @Test
    void aLengthWithItsTopBitSetIsRefusedAsTheHugeUnsignedNumberItIs() throws Exception {
        try (Raw r = raw(MAX_BODY)) {
            r.send(0x8000_0010, PdConnection.CHUNK, new byte[0]);
            PdProtocolException e = refused(PdProtocolException.class, r);
            assertTrue(e.getMessage().contains(Integer.toUnsignedString(0x8000_0010)), e.getMessage());
        }
    }

    @Test
    void aFrameOfAnUnknownKindIsRefused() throws Exception {
        try (Raw r = raw(MAX_BODY)) {
            r.send(1, (byte) 9, new byte[] {0});
            assertTrue(refused(PdProtocolException.class, r).getMessage().contains("unknown frame kind 9"));
        }
    }

    @Test
    void anAcknowledgementOfOtherThanOneByteIsRefused() throws Exception {
        try (Raw r = raw(MAX_BODY)) {
            r.send(1, PdConnection.ACK, new byte[] {PdConnection.REFUSED});
            assertEquals(new PdConnection.Ack(PdConnection.REFUSED), r.server().receive());
            r.send(2, PdConnection.ACK, new byte[] {0, 0});
            assertTrue(refused(PdProtocolException.class, r).getMessage().contains("acknowledgement of 2 bytes"));
        }
        try (Raw r = raw(MAX_BODY)) {
            r.send(0, PdConnection.ACK, new byte[0]);
            assertTrue(refused(PdProtocolException.class, r).getMessage().contains("acknowledgement of 0 bytes"));
        }
    }

    @Test
    void aChunkFrameTooShortToHoldItsSlotIsRefused() throws Exception {
        try (Raw r = raw(MAX_BODY); Arena arena = Arena.ofConfined()) {
            r.send(Long.BYTES, PdConnection.CHUNK, ByteBuffer.allocate(Long.BYTES).putLong(77).array());
            assertEquals(new PdConnection.ChunkHeader(77, 0), r.server().receive()); // a slot and no payload: well formed
            assertThrows(IllegalStateException.class, () -> r.server().receive()); // its empty payload is still pending
            r.server().readChunkPayload(arena.allocate(0));
            r.send(Long.BYTES - 1, PdConnection.CHUNK, new byte[Long.BYTES - 1]);
            assertTrue(refused(PdProtocolException.class, r).getMessage().contains("has no slot"));
        }
    }

    @Test
    void aChunksPayloadMustBeReadOrSkippedBeforeTheNextFrameAndIntoRoomOfItsSize() throws Exception {
        try (Raw r = raw(MAX_BODY); Arena arena = Arena.ofConfined()) {
            assertThrows(IllegalStateException.class, () -> r.server().readChunkPayload(arena.allocate(4)));
            assertThrows(IllegalStateException.class, () -> r.server().skipChunkPayload());
            r.send(Long.BYTES + 4, PdConnection.CHUNK, ByteBuffer.allocate(12).putLong(5).putInt(0x01020304).array());
            assertEquals(new PdConnection.ChunkHeader(5, 4), r.server().receive());
            assertThrows(IllegalStateException.class, () -> r.server().receive());
            assertThrows(IllegalArgumentException.class, () -> r.server().readChunkPayload(arena.allocate(3)));
            assertThrows(IllegalArgumentException.class, () -> r.server().readChunkPayload(arena.allocate(5)));
            MemorySegment into = arena.allocate(4);
            r.server().readChunkPayload(into);
            assertEquals(0x01020304, Integer.reverseBytes(into.get(ValueLayout.JAVA_INT_UNALIGNED, 0)));
            r.send(1, PdConnection.ACK, new byte[] {PdConnection.OK}); // the connection is in step again
            assertEquals(new PdConnection.Ack(PdConnection.OK), r.server().receive());
        }
    }

    // ---- keyed: what a relay in the middle can do -------------------------------------------------

    /**
     * A keyed client whose frames pass a relay that hands the bytes after the handshake to
     * {@code rewrite} once {@code frames} whole message frames (each {@code frameBytes} long, tag
     * included) have arrived, and forwards what it returns.
     */
    private static void throughRelay(int frames, int frameBytes, UnaryOperator<byte[]> rewrite,
                                     RelayCheck check) throws Exception {
        throughRelay(frames, frameBytes, rewrite, 0, false, check);
    }

    /**
     * As above, then forwarding the next {@code dribbled} bytes one at a time, each in a write of its own;
     * {@code withoutChannel}: the server's socket has no channel (a plain {@code ServerSocket} accepted it,
     * as the proxy's notice port does), so it reads through its streams.
     */
    private static void throughRelay(int frames, int frameBytes, UnaryOperator<byte[]> rewrite, int dribbled,
                                     boolean withoutChannel, RelayCheck check) throws Exception {
        try (ServerSocket listener = withoutChannel ? new ServerSocket(0, 1, InetAddress.getLoopbackAddress())
                : ServerSocketChannel.open().bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0)).socket();
             ServerSocketChannel relay = ServerSocketChannel.open()
                     .bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))) {
            int port = listener.getLocalPort();
            CompletableFuture<PdConnection> accepted = CompletableFuture.supplyAsync(() -> {
                try {
                    Socket s = listener.accept();
                    assertEquals(withoutChannel, s.getChannel() == null);
                    return PdConnection.accept(s, TOKEN, TIMEOUT, MAX_BODY).orElseThrow();
                } catch (IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            }, r -> Thread.ofVirtual().start(r));
            Thread relaying = Thread.ofVirtual().start(() -> relay(relay, port, frames * frameBytes, rewrite,
                    dribbled));
            try (PdConnection client = PdConnection.connect("127.0.0.1",
                    ((InetSocketAddress) relay.getLocalAddress()).getPort(), TOKEN, TIMEOUT, MAX_BODY);
                 PdConnection server = accepted.get()) {
                assertTimeoutPreemptively(BOUND, () -> check.run(client, server));
            } finally {
                relaying.interrupt();
            }
        }
    }

    @FunctionalInterface
    private interface RelayCheck {
        void run(PdConnection client, PdConnection server) throws Exception;
    }

    private static void relay(ServerSocketChannel relay, int port, int captured, UnaryOperator<byte[]> rewrite,
                              int dribbled) {
        try (SocketChannel in = relay.accept(); SocketChannel out = SocketChannel.open(new InetSocketAddress(
                InetAddress.getLoopbackAddress(), port))) {
            Thread back = Thread.ofVirtual().start(() -> pump(out, in));
            write(out, readExactly(in, HANDSHAKE_BYTES - LmProtocol.CLIENT_HEADER_BYTES - LmSession.PROOF_BYTES));
            write(out, readExactly(in, LmProtocol.CLIENT_HEADER_BYTES + LmSession.PROOF_BYTES));
            write(out, rewrite.apply(readExactly(in, captured)));
            for (int i = 0; i < dribbled; i++) {
                write(out, readExactly(in, 1));
                Thread.sleep(0, 1_000); // each byte its own segment, most of the time
            }
            pump(in, out);
            back.join();
        } catch (IOException | InterruptedException e) {
            // the test closed a side
        }
    }

    private static byte[] readExactly(SocketChannel in, int n) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(n);
        while (b.hasRemaining()) {
            if (in.read(b) < 0) {
                throw new IOException("closed");
            }
        }
        return b.array();
    }

    private static void write(SocketChannel out, byte[] bytes) throws IOException {
        ByteBuffer b = ByteBuffer.wrap(bytes);
        while (b.hasRemaining()) {
            out.write(b);
        }
    }

    private static void pump(SocketChannel from, SocketChannel to) {
        ByteBuffer b = ByteBuffer.allocate(8192);
        try {
            while (from.read(b.clear()) >= 0) {
                to.write(b.flip());
                while (b.hasRemaining()) {
                    to.write(b);
                }
            }
        } catch (IOException e) {
            // closed
        }
    }

    /** A message frame of {@code body}: header, body, tag. */
    private static int messageFrameBytes(int body) {
        return 5 + body + LmSession.TAG_BYTES;
    }

    private static byte[] body(char c) {
        return ("message " + c).getBytes(StandardCharsets.UTF_8);
    }

    @Test
    void aFrameRepeatedOnTheWireFailsItsTagTheSecondTime() throws Exception {
        int frame = messageFrameBytes(body('a').length);
        throughRelay(1, frame, captured -> {
            byte[] twice = new byte[2 * captured.length];
            System.arraycopy(captured, 0, twice, 0, captured.length);
            System.arraycopy(captured, 0, twice, captured.length, captured.length);
            return twice;
        }, (client, server) -> {
            client.sendMessage(body('a'));
            assertArrayEquals(body('a'), ((PdConnection.Message) server.receive()).body());
            assertThrows(PdTagMismatchException.class, server::receive);
        });
    }

    @Test
    void twoFramesSwappedOnTheWireFailTheirTags() throws Exception {
        int frame = messageFrameBytes(body('a').length);
        throughRelay(2, frame, captured -> {
            byte[] swapped = new byte[captured.length];
            System.arraycopy(captured, frame, swapped, 0, frame);
            System.arraycopy(captured, 0, swapped, frame, frame);
            return swapped;
        }, (client, server) -> {
            client.sendMessage(body('a'));
            client.sendMessage(body('b'));
            assertThrows(PdTagMismatchException.class, server::receive);
        });
    }

    @Test
    void aFrameDroppedOnTheWireMakesTheNextOneFailItsTag() throws Exception {
        int frame = messageFrameBytes(body('a').length);
        throughRelay(1, frame, captured -> new byte[0], (client, server) -> {
            client.sendMessage(body('a'));
            client.sendMessage(body('b'));
            assertThrows(PdTagMismatchException.class, server::receive);
        });
    }

    @Test
    void anAlteredAcknowledgementFailsItsTag() throws Exception {
        int frame = messageFrameBytes(1);
        throughRelay(1, frame, captured -> {
            captured[5] ^= PdConnection.REFUSED; // OK becomes REFUSED
            return captured;
        }, (client, server) -> {
            client.sendAck(PdConnection.OK);
            assertThrows(PdTagMismatchException.class, server::receive);
        });
    }

    @Test
    void aSkippedChunkStillHasItsTagChecked() throws Exception {
        int payload = 300;
        int frame = 5 + Long.BYTES + payload + LmSession.TAG_BYTES;
        try (Arena arena = Arena.ofShared()) { // the checks run on the timeout's thread
            MemorySegment chunk = random(arena, payload, 9);
            throughRelay(1, frame, captured -> {
                captured[5 + Long.BYTES + 100] ^= 1;
                return captured;
            }, (client, server) -> {
                client.sendChunk(4, chunk);
                assertEquals(new PdConnection.ChunkHeader(4, payload), server.receive());
                assertThrows(PdTagMismatchException.class, server::skipChunkPayload);
            });
            throughRelay(1, frame, UnaryOperator.identity(), (client, server) -> {
                client.sendChunk(4, chunk);
                client.sendAck(PdConnection.OK);
                assertEquals(new PdConnection.ChunkHeader(4, payload), server.receive());
                server.skipChunkPayload(); // an untouched chunk skips cleanly, and the next frame's tag still holds
                assertEquals(new PdConnection.Ack(PdConnection.OK), server.receive());
            });
        }
    }

    /** A server gives a peer minutes between frames, but a frame once begun only its allowance: a stalled body is not held. */
    @Test
    void aMessageWhoseBodyStopsComingIsGivenUpOnWithinItsAllowanceNotTheIdleTimeout() throws Exception {
        try (Raw r = raw(MAX_BODY)) {
            r.server().setIdleTimeout(Duration.ofMinutes(10));
            r.send(500, PdConnection.MESSAGE, new byte[10]); // 10 of 500 bytes, then nothing
            long t0 = System.nanoTime();
            SocketTimeoutException e = refused(SocketTimeoutException.class, r);
            long ms = (System.nanoTime() - t0) / 1_000_000;
            assertTrue(ms >= TIMEOUT.toMillis() - 100 && ms < TIMEOUT.toMillis() + 3_000, "given up on after " + ms + " ms");
            assertTrue(e.getMessage().contains("a frame of 500 bytes arrived slower than"), e.getMessage());
        }
        try (Raw r = raw(MAX_BODY)) { // and between frames, the idle timeout is what ends the wait
            r.server().setIdleTimeout(Duration.ofMillis(300));
            SocketTimeoutException e = refused(SocketTimeoutException.class, r);
            assertTrue(e.getMessage().contains("no frame within the idle timeout of 300 ms"), e.getMessage());
        }
    }

    @Test
    void aSkippedChunkWhoseBytesStopComingIsGivenUpOnWithinItsAllowance() throws Exception {
        int payload = 10_000;
        try (Raw r = raw(MAX_BODY + payload)) {
            byte[] slotAndSome = ByteBuffer.allocate(Long.BYTES + 100).putLong(7).array(); // 100 of 10,000 bytes, then nothing
            r.send(Long.BYTES + payload, PdConnection.CHUNK, slotAndSome);
            assertEquals(new PdConnection.ChunkHeader(7, payload), r.server().receive());
            long t0 = System.nanoTime();
            SocketTimeoutException e = assertTimeoutPreemptively(BOUND, () -> assertThrows(SocketTimeoutException.class,
                    r.server()::skipChunkPayload), "a skip read by the channel has no socket timeout: its deadline ends it");
            long ms = (System.nanoTime() - t0) / 1_000_000;
            assertTrue(ms >= TIMEOUT.toMillis() && ms < TIMEOUT.toMillis() + 1_000, ms + " ms: " + e.getMessage());
            assertTrue(r.server().isClosed());
        }
    }

    @ParameterizedTest(name = "server without a channel: {0}")
    @ValueSource(booleans = {false, true})
    void framesThatArriveOneByteAtATimeAreReadWholeAndChecked(boolean withoutChannel) throws Exception {
        int payload = 1_000; // within the relay pair's 1 KiB frame limit
        int frames = messageFrameBytes(body('a').length) + messageFrameBytes(1) + 5 + Long.BYTES + payload
                + LmSession.TAG_BYTES;
        try (Arena arena = Arena.ofShared()) {
            MemorySegment chunk = random(arena, payload, 21);
            throughRelay(0, 0, nothing -> nothing, frames, withoutChannel, (client, server) -> {
                client.sendMessage(body('a'));
                client.sendAck(PdConnection.REFUSED);
                client.sendChunk(6, chunk);
                assertArrayEquals(body('a'), ((PdConnection.Message) server.receive()).body());
                assertEquals(new PdConnection.Ack(PdConnection.REFUSED), server.receive());
                assertEquals(new PdConnection.ChunkHeader(6, payload), server.receive());
                MemorySegment into = arena.allocate(payload);
                server.readChunkPayload(into);
                assertEquals(-1, into.mismatch(chunk));
            });
        }
    }

    // ---- a socket without a channel ---------------------------------------------------------------

    @Test
    void aSocketWithoutAChannelSpeaksTheSameFramesThroughItsStreams() throws Exception {
        int maxBody = 2 << 20;
        try (ServerSocket plain = new ServerSocket(0, 1, InetAddress.getLoopbackAddress()); Arena arena = Arena.ofShared()) {
            CompletableFuture<PdConnection> accepted = CompletableFuture.supplyAsync(() -> {
                try {
                    Socket s = plain.accept();
                    assertEquals(null, s.getChannel());
                    return PdConnection.accept(s, TOKEN, TIMEOUT, maxBody).orElseThrow();
                } catch (IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            }, r -> Thread.ofVirtual().start(r));
            try (PdConnection client = PdConnection.connect("127.0.0.1", plain.getLocalPort(), TOKEN, TIMEOUT, maxBody);
                 PdConnection server = accepted.get()) {
                MemorySegment large = random(arena, 200_000, 11); // more than the streams' 64 KiB pieces
                MemorySegment small = random(arena, 77, 12);
                assertTimeoutPreemptively(BOUND, () -> {
                    // the channel's side sends, the streams' side reads: in pieces, tagged as they come
                    CompletableFuture<Void> sent = sending(() -> {
                        client.sendChunk(1, large);
                        client.sendChunk(2, small);
                    });
                    assertEquals(new PdConnection.ChunkHeader(1, large.byteSize()), server.receive());
                    MemorySegment into = arena.allocate(large.byteSize());
                    server.readChunkPayload(into);
                    assertEquals(-1, into.mismatch(large));
                    assertEquals(new PdConnection.ChunkHeader(2, small.byteSize()), server.receive());
                    server.skipChunkPayload();
                    sent.get();
                    // the streams' side sends a chunk, a message and an acknowledgement; the channel's side reads them
                    sent = sending(() -> {
                        server.sendChunk(3, large);
                        server.sendMessage(body('z'));
                        server.sendAck(PdConnection.REFUSED);
                    });
                    assertEquals(new PdConnection.ChunkHeader(3, large.byteSize()), client.receive());
                    MemorySegment back = arena.allocate(large.byteSize());
                    client.readChunkPayload(back);
                    assertEquals(-1, back.mismatch(large));
                    assertArrayEquals(body('z'), ((PdConnection.Message) client.receive()).body());
                    assertEquals(new PdConnection.Ack(PdConnection.REFUSED), client.receive());
                    sent.get();
                });
            }
        }
    }

    @FunctionalInterface
    private interface Sends {
        void run() throws IOException;
    }

    /** Runs {@code sends} on a thread of its own: a writer blocks when the reader is not reading yet. */
    private static CompletableFuture<Void> sending(Sends sends) {
        return CompletableFuture.runAsync(() -> {
            try {
                sends.run();
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        }, r -> Thread.ofVirtual().start(r));
    }

    // ---- a peer that stops reading ------------------------------------------------------------------

    @Test
    void aPeerThatStopsReadingHoldsASenderNoLongerThanTheFramesAllowance() throws Exception {
        Duration timeout = Duration.ofMillis(200);
        int bytes = 1 << 20; // far more than two 4 KiB socket buffers hold
        try (ServerSocketChannel listener = ServerSocketChannel.open(); Arena arena = Arena.ofShared()) {
            listener.setOption(java.net.StandardSocketOptions.SO_RCVBUF, 4096); // accepted sockets inherit it
            listener.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            int port = ((InetSocketAddress) listener.getLocalAddress()).getPort();
            MemorySegment chunk = arena.allocate(bytes);
            for (int attempt = 0; attempt < 2; attempt++) {
                boolean asChunk = attempt == 1;
                SocketChannel client = SocketChannel.open();
                client.setOption(java.net.StandardSocketOptions.SO_SNDBUF, 4096);
                client.connect(listener.getLocalAddress());
                try (PdConnection sender = PdConnection.unkeyedForBenchmark(client.socket(), timeout, bytes + 64);
                     SocketChannel silent = listener.accept()) { // accepted, never read
                    long t0 = System.nanoTime();
                    IOException e = assertTimeoutPreemptively(BOUND, () -> assertThrows(IOException.class, () -> {
                        if (asChunk) {
                            sender.sendChunk(1, chunk);
                        } else {
                            sender.sendMessage(new byte[bytes]);
                        }
                    }));
                    long ms = (System.nanoTime() - t0) / 1_000_000;
                    // the allowance: the timeout plus the frame at 1 MiB/s (1 s here)
                    assertTrue(ms >= 1_000 + timeout.toMillis() - 50 && ms < 1_000 + timeout.toMillis() + 3_000,
                            (asChunk ? "chunk" : "message") + ": " + ms + " ms, " + e);
                    assertTrue(sender.isClosed(), "the watchdog closed the stalled connection");
                    assertTrue(silent.isOpen());
                }
            }
        }
    }
}
