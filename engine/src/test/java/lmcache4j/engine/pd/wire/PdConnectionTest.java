package lmcache4j.engine.pd.wire;

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
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.CompletableFuture;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import lmcache4j.engine.remote.lm.LmProtocol;
import lmcache4j.engine.remote.lm.LmSession;
import lmcache4j.engine.remote.lm.PayloadTag;

/**
 * One PD connection's receiving side, read through its channel: frames that arrive together (a
 * chunk's header with the first bytes of its payload, a whole small chunk with its tag, several
 * acknowledgements) are each read whole and tag-checked; and every wait is bounded by a deadline,
 * since channel reads have no read timeout: a connection idle past its idle timeout, and a frame
 * that stops halfway, end in a timeout instead of a thread blocked for good.
 */
class PdConnectionTest {
    private static final byte[] TOKEN = "pd-connection-test-token-0123456789".getBytes(StandardCharsets.UTF_8);
    private static final Duration TIMEOUT = Duration.ofMillis(400);
    private static final int MAX_BODY = 2 << 20;
    private static final java.util.concurrent.Executor VIRTUAL = r -> Thread.ofVirtual().start(r);

    /** A keyed pair over loopback: the client's end and the server's. */
    private record Pair(PdConnection client, PdConnection server) implements AutoCloseable {
        @Override
        public void close() {
            client.close();
            server.close();
        }
    }

    private static Pair keyedPair() throws Exception {
        try (ServerSocketChannel listener = ServerSocketChannel.open()
                .bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))) {
            CompletableFuture<PdConnection> accepted = acceptKeyed(listener);
            PdConnection client = PdConnection.connect("127.0.0.1", ((InetSocketAddress) listener.getLocalAddress())
                    .getPort(), TOKEN, TIMEOUT, MAX_BODY);
            return new Pair(client, accepted.get());
        }
    }

    /** The server's end of the next connection to {@code listener}, once its handshake is done. */
    private static CompletableFuture<PdConnection> acceptKeyed(ServerSocketChannel listener) {
        return CompletableFuture.supplyAsync(() -> {
            try {
                return PdConnection.accept(listener.accept().socket(), TOKEN, TIMEOUT, MAX_BODY).orElseThrow();
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        }, VIRTUAL); // not the common pool: on two cores its one worker may be taken by another wait of the test
    }

    /** Runs {@code body} with this process preferring {@code algorithm}: both ends of a pair in it then choose it. */
    private static void preferring(PayloadTag.Algorithm algorithm, ThrowingRunnable body) throws Exception {
        String before = System.getProperty(PayloadTag.PREFERENCE_PROPERTY);
        System.setProperty(PayloadTag.PREFERENCE_PROPERTY, algorithm.toString());
        try {
            body.run();
        } finally {
            if (before == null) {
                System.clearProperty(PayloadTag.PREFERENCE_PROPERTY);
            } else {
                System.setProperty(PayloadTag.PREFERENCE_PROPERTY, before);
            }
        }
    }

    private interface ThrowingRunnable {
        void run() throws Exception;
    }

    @ParameterizedTest
    @EnumSource(PayloadTag.Algorithm.class)
    void framesThatArriveTogetherAreEachReadWholeAndChecked(PayloadTag.Algorithm algorithm) throws Exception {
        preferring(algorithm, () -> framesThatArriveTogetherAreEachReadWholeAndChecked());
    }

    private void framesThatArriveTogetherAreEachReadWholeAndChecked() throws Exception {
        try (Pair p = keyedPair(); Arena arena = Arena.ofConfined()) {
            assertEquals(Optional.of(PayloadTag.Algorithm.preferred()), p.client().tagAlgorithm(), "the handshake's choice");
            assertEquals(p.client().tagAlgorithm(), p.server().tagAlgorithm());
            MemorySegment small = random(arena, 1_000, 1); // the whole chunk fits the read that brings its header
            MemorySegment large = random(arena, 1_300_000, 2); // written in three pieces, tagged on arrival in more
            p.client().sendChunk(7, small);
            p.client().sendChunk(8, large);
            p.client().sendAck(PdConnection.OK);
            p.client().sendAck(PdConnection.REFUSED);
            p.client().sendMessage("hello".getBytes(StandardCharsets.UTF_8));

            assertEquals(new PdConnection.ChunkHeader(7, small.byteSize()), p.server().receive());
            MemorySegment into = arena.allocate(small.byteSize());
            p.server().readChunkPayload(into); // tag checked: the bytes read with the header are in it
            assertEquals(-1, into.mismatch(small));
            assertEquals(new PdConnection.ChunkHeader(8, large.byteSize()), p.server().receive());
            MemorySegment bigInto = arena.allocate(large.byteSize());
            p.server().readChunkPayload(bigInto);
            assertEquals(-1, bigInto.mismatch(large));
            assertEquals(new PdConnection.Ack(PdConnection.OK), p.server().receive());
            assertEquals(new PdConnection.Ack(PdConnection.REFUSED), p.server().receive());
            PdConnection.Frame m = p.server().receive();
            assertArrayEquals("hello".getBytes(StandardCharsets.UTF_8), ((PdConnection.Message) m).body());
        }
    }

    @ParameterizedTest
    @EnumSource(PayloadTag.Algorithm.class)
    void aSmallChunkAlteredInFlightFailsItsTagEvenWhenItArrivedWithItsHeader(PayloadTag.Algorithm algorithm) throws Exception {
        preferring(algorithm, () -> aSmallChunkAlteredInFlightFailsItsTagEvenWhenItArrivedWithItsHeader());
    }

    private void aSmallChunkAlteredInFlightFailsItsTagEvenWhenItArrivedWithItsHeader() throws Exception {
        try (ServerSocketChannel listener = ServerSocketChannel.open()
                .bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0)); Arena arena = Arena.ofConfined()) {
            // An unkeyed client whose bytes are forged by hand would not get past the handshake, so a keyed pair is
            // made and the server's socket is read raw in between: the test rewrites one byte and forwards the rest.
            int port = ((InetSocketAddress) listener.getLocalAddress()).getPort();
            try (ServerSocketChannel relay = ServerSocketChannel.open()
                    .bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))) {
                int relayPort = ((InetSocketAddress) relay.getLocalAddress()).getPort();
                CompletableFuture<PdConnection> accepted = acceptKeyed(listener);
                CompletableFuture<Void> flipper = CompletableFuture.runAsync(() -> flipOneByteOfTheFirstChunk(relay, port),
                        VIRTUAL);
                try (PdConnection client = PdConnection.connect("127.0.0.1", relayPort, TOKEN, TIMEOUT, MAX_BODY);
                     PdConnection server = accepted.get()) {
                    client.sendChunk(3, random(arena, 500, 3));
                    assertTrue(server.receive() instanceof PdConnection.ChunkHeader);
                    assertThrows(PdTagMismatchException.class, () -> server.readChunkPayload(arena.allocate(500)));
                }
                flipper.cancel(true);
            }
        }
    }

    /** Relays one connection to {@code port}, flipping the 50th byte after the handshake (inside the chunk's payload). */
    private static void flipOneByteOfTheFirstChunk(ServerSocketChannel relay, int port) {
        try (SocketChannel in = relay.accept(); SocketChannel out = SocketChannel.open(new InetSocketAddress(
                InetAddress.getLoopbackAddress(), port))) {
            Thread back = Thread.ofVirtual().start(() -> copy(out, in, Long.MAX_VALUE));
            copy(in, out, 2L * LmProtocol.CLIENT_HEADER_BYTES + LmSession.HELLO_BYTES + LmSession.PROOF_BYTES);
            ByteBuffer b = ByteBuffer.allocate(64 * 1024);
            while (b.position() <= 50) { // the frame's header and slot are 13 bytes: byte 50 is the payload's
                if (in.read(b) < 0) {
                    return;
                }
            }
            b.flip();
            b.put(50, (byte) (b.get(50) ^ 1));
            while (b.hasRemaining()) {
                out.write(b);
            }
            copy(in, out, Long.MAX_VALUE);
            back.join();
        } catch (IOException | InterruptedException e) {
            // the test closed a side
        }
    }

    private static void copy(SocketChannel from, SocketChannel to, long limit) {
        ByteBuffer b = ByteBuffer.allocate(1);
        try {
            for (long passed = 0; passed < limit; passed++) {
                if (from.read(b.clear()) < 0) {
                    return;
                }
                to.write(b.flip());
            }
        } catch (IOException e) {
            // closed
        }
    }

    @Test
    void aConnectionIdlePastItsIdleTimeoutEndsInATimeout() throws Exception {
        try (Pair p = keyedPair()) {
            p.server().setIdleTimeout(Duration.ofMillis(100));
            long t0 = System.nanoTime();
            IOException e = assertTimeoutPreemptively(Duration.ofSeconds(5), () ->
                    assertThrows(IOException.class, () -> p.server().receive()));
            long ms = (System.nanoTime() - t0) / 1_000_000;
            assertTrue(e instanceof SocketTimeoutException, e.toString());
            assertTrue(ms >= 100 && ms < 100 + TIMEOUT.toMillis() + 1_000, ms + " ms");
            assertTrue(p.server().isClosed(), "a connection whose wait ran out is closed");
        }
    }

    @Test
    void aFrameThatStopsHalfwayEndsInATimeout() throws Exception {
        try (ServerSocketChannel listener = ServerSocketChannel.open()
                .bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))) {
            SocketChannel raw = SocketChannel.open(listener.getLocalAddress());
            PdConnection server = PdConnection.unkeyedForBenchmark(listener.accept().socket(), TIMEOUT, MAX_BODY);
            try (raw; server) {
                // a message frame of 100 bytes of which 10 come
                raw.write(ByteBuffer.allocate(15).putInt(100).put(PdConnection.MESSAGE).put(new byte[10]).flip());
                long t0 = System.nanoTime();
                IOException e = assertTimeoutPreemptively(Duration.ofSeconds(10), () ->
                        assertThrows(IOException.class, server::receive));
                long ms = (System.nanoTime() - t0) / 1_000_000;
                assertTrue(e instanceof SocketTimeoutException, e.toString());
                assertTrue(ms >= TIMEOUT.toMillis(), ms + " ms");
            }
        }
    }

    static MemorySegment random(Arena arena, int bytes, long seed) {
        MemorySegment s = arena.allocate(bytes);
        byte[] b = new byte[bytes];
        new Random(seed).nextBytes(b);
        MemorySegment.copy(b, 0, s, ValueLayout.JAVA_BYTE, 0, bytes);
        return s;
    }
}
