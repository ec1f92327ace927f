package lmcache4j.server.lm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import lmcache4j.allocator.DType;
import lmcache4j.allocator.MemoryFormat;
import lmcache4j.allocator.MemoryObj;
import lmcache4j.allocator.TensorShape;
import lmcache4j.engine.remote.RemoteMetadata;
import lmcache4j.engine.remote.lm.LmConnector;
import lmcache4j.engine.remote.lm.LmProtocol;
import lmcache4j.engine.remote.lm.LmSession;
import lmcache4j.engine.storage.AllocationMode;
import lmcache4j.engine.storage.cpu.LocalCpuBackend;

/**
 * One client must not be able to knock the lm:// server over for the others: each test is an
 * attack that worked against the earlier server, in bounded loops (count and time), on loopback.
 */
@Timeout(120)
class LmServerAbuseTest {
    private static final InetAddress LOOPBACK = InetAddress.getLoopbackAddress();
    private static final int MB = 1 << 20;

    private static SocketChannel open(LmCacheServer s) throws IOException {
        SocketChannel ch = SocketChannel.open(new InetSocketAddress(LOOPBACK, s.port()));
        ch.setOption(StandardSocketOptions.SO_LINGER, 0);
        return ch;
    }

    private static RemoteMetadata binary(int length) {
        return new RemoteMetadata(length, MemoryFormat.BINARY, Optional.of(DType.UINT8), TensorShape.of(length, 0, 0, 0));
    }

    private static int exist(SocketChannel ch, String key) throws IOException {
        LmProtocol.writeFully(ch, ByteBuffer.wrap(LmProtocol.encodeClient(LmProtocol.EXIST, 0, key)));
        return LmProtocol.replyCode(LmProtocol.readFully(ch, LmProtocol.SERVER_HEADER_BYTES));
    }

    /** Whether the server closed {@code ch} within {@code within}: a read sees end of stream or a reset. */
    private static boolean closedByServer(SocketChannel ch, Duration within) throws IOException {
        ch.configureBlocking(false);
        long deadline = System.nanoTime() + within.toNanos();
        ByteBuffer one = ByteBuffer.allocate(64);
        while (System.nanoTime() < deadline) {
            try {
                if (ch.read(one.clear()) < 0) {
                    return true;
                }
            } catch (IOException reset) {
                return true;
            }
            LockSupportSleep.millis(20);
        }
        return false;
    }

    /** What a peer sent: bytes, and whether it closed the connection. */
    record Received(long bytes, boolean closed) {
    }

    /** What the server sends on {@code ch} until it closes it, or until {@code within} has passed. */
    static Received receiveUntilClosed(SocketChannel ch, Duration within) throws IOException {
        ch.configureBlocking(false);
        long deadline = System.nanoTime() + within.toNanos();
        ByteBuffer buf = ByteBuffer.allocate(64 * 1024);
        long received = 0;
        while (System.nanoTime() < deadline) {
            try {
                int n = ch.read(buf.clear());
                if (n < 0) {
                    return new Received(received, true);
                }
                received += n;
            } catch (IOException reset) {
                return new Received(received, true);
            }
            LockSupportSleep.millis(5);
        }
        return new Received(received, false);
    }

    @Test
    void zeroLengthPutsAreChargedAndBounded() throws Exception {
        LmServerLimits limits = LmServerLimits.defaults().withMaxEntries(1_000);
        try (LmCacheServer server = LmCacheServer.start(LOOPBACK, 0, 4 * MB, Optional.empty(), MB, limits);
             SocketChannel ch = open(server)) {
            // 50,000 distinct zero-length PUTs, pipelined (a PUT has no reply), then one EXIST to wait for them all
            ByteBuffer batch = ByteBuffer.allocate(1000 * LmProtocol.CLIENT_HEADER_BYTES);
            for (int i = 0; i < 50_000; i++) {
                batch.put(LmProtocol.encodeClient(LmProtocol.PUT, binary(0), "zero@1@0@" + Integer.toHexString(i) + "@half"));
                if (!batch.hasRemaining()) {
                    LmProtocol.writeFully(ch, batch.flip());
                    batch.clear();
                }
            }
            assertEquals(LmProtocol.SUCCESS, exist(ch, "zero@1@0@" + Integer.toHexString(49_999) + "@half"));
            LmCacheServer.Stats st = server.stats();
            assertEquals(50_000, st.puts());
            assertEquals(1_000, st.entries(), "the entry limit holds: " + st);
            assertEquals(49_000, st.evictions());
            assertEquals(1_000L * LmCacheServer.ENTRY_CHARGE_BYTES, st.chargedBytes());
        }
        // without an entry limit in reach, the size limit charges each entry ENTRY_CHARGE_BYTES
        try (LmCacheServer server = LmCacheServer.start(LOOPBACK, 0, MB, Optional.empty(), MB);
             SocketChannel ch = open(server)) {
            for (int i = 0; i < 5_000; i++) {
                LmProtocol.writeFully(ch, ByteBuffer.wrap(LmProtocol.encodeClient(LmProtocol.PUT, binary(0),
                        "zero@1@0@" + Integer.toHexString(i) + "@half")));
            }
            assertEquals(LmProtocol.SUCCESS, exist(ch, "zero@1@0@" + Integer.toHexString(4_999) + "@half"));
            LmCacheServer.Stats st = server.stats();
            assertEquals(MB / LmCacheServer.ENTRY_CHARGE_BYTES, st.entries(), st.toString());
            assertTrue(st.chargedBytes() <= MB, st.toString());
        }
    }

    @Test
    void aHeaderWithoutItsPayloadEvictsNothingAndBlocksNoOne() throws Exception {
        LmServerLimits limits = LmServerLimits.defaults().withStallTimeout(Duration.ofMillis(1500));
        long room = 40 * (TestChunks.CHUNK_BYTES + LmCacheServer.ENTRY_CHARGE_BYTES);
        try (LmCacheServer server = LmCacheServer.start(LOOPBACK, 0, room, Optional.empty(), 64 * MB, limits);
             LmConnector lm = LmServerConnectorTest.connector(server, "?pool=2");
             LocalCpuBackend cpu = TestChunks.cpuTier(4, "LRU", 1)) {
            MemoryObj obj = TestChunks.chunk(cpu, 5, AllocationMode.NO_EVICTION).orElseThrow();
            RemoteMetadata meta = RemoteMetadata.forObject(obj);
            for (int i = 0; i < 40; i++) {
                LmServerConnectorTest.await(lm.put(TestChunks.key(i), meta, obj.segment()));
            }
            assertEquals(40, server.stats().entries());
            // the attack: a PUT declaring the whole pool, and never its payload
            try (SocketChannel attacker = open(server)) {
                LmProtocol.writeFully(attacker, ByteBuffer.wrap(LmProtocol.encodeClient(LmProtocol.PUT,
                        binary((int) room), "attack@1@0@1@half")));
                Thread.sleep(200);
                assertEquals(40, server.stats().entries(), "the header alone evicted entries: " + server.stats());
                assertEquals(0, server.stats().evictions());
                // other clients still get every entry, and their puts are stored (evicting one old entry each)
                for (int i = 0; i < 40; i += 8) {
                    MemoryObj back = LmServerConnectorTest.await(lm.get(TestChunks.key(i), m -> cpu.allocate(m.toShape(),
                            m.dtype().orElseThrow(), m.format(), AllocationMode.NO_EVICTION))).orElseThrow();
                    assertEquals(-1L, back.segment().mismatch(obj.segment()));
                    back.release();
                }
                LmServerConnectorTest.await(lm.put(TestChunks.key(100), meta, obj.segment()));
                assertTrue(LmServerConnectorTest.await(lm.exists(TestChunks.key(100))));
                // the stalled connection is closed after the stall timeout, and what it held is given back
                assertTrue(closedByServer(attacker, Duration.ofSeconds(10)), "a stalled PUT kept its connection");
            }
            assertTrue(server.stats().timedOutConnections() >= 1, server.stats().toString());
            LmCacheServer.Stats st = server.stats();
            assertEquals(st.entries() * (TestChunks.CHUNK_BYTES + LmCacheServer.ENTRY_CHARGE_BYTES), st.chargedBytes());
            assertEquals(st.entries() * TestChunks.CHUNK_BYTES, st.poolUsedBytes(), st.toString());
            obj.release();
        }
    }

    @Test
    void repliesNobodyReadsDoNotPinThePoolForever() throws Exception {
        LmServerLimits limits = LmServerLimits.defaults().withStallTimeout(Duration.ofMillis(1000));
        try (LmCacheServer server = LmCacheServer.start(LOOPBACK, 0, 32 * MB, Optional.empty(), 32 * MB, limits);
             LmConnector lm = LmServerConnectorTest.connector(server, "");
             SocketChannel reader = open(server)) {
            int big = 8 * MB;
            try (java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofShared()) {
                LmServerConnectorTest.await(lm.put(TestChunks.key(1), binary(big), arena.allocate(big)));
            }
            reader.setOption(StandardSocketOptions.SO_RCVBUF, 4096);
            // 4 GETs of 8 MiB, never read: the server's sends fill the socket buffers and stop
            for (int i = 0; i < 4; i++) {
                LmProtocol.writeFully(reader, ByteBuffer.wrap(LmProtocol.encodeClient(LmProtocol.GET, 0,
                        TestChunks.key(1).toKeyString())));
            }
            Thread.sleep(300);
            assertTrue(LmServerConnectorTest.await(lm.remove(TestChunks.key(1))));
            assertTrue(server.stats().poolUsedBytes() >= big, "the blocked send holds the removed entry's pages");
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
            while (server.stats().poolUsedBytes() > 0 && System.nanoTime() < deadline) {
                Thread.sleep(50);
            }
            assertEquals(0, server.stats().poolUsedBytes(), "a reply nobody reads pinned the pool: " + server.stats());
            assertTrue(server.stats().timedOutConnections() >= 1);
        }
    }

    @Test
    void idleConnectionsCloseAndTheLimitReclaimsTheLongestIdle() throws Exception {
        LmServerLimits limits = LmServerLimits.defaults().withMaxConnections(20).withReclaimIdleAfter(Duration.ofMillis(300))
                .withIdleTimeout(Duration.ofSeconds(2));
        try (LmCacheServer server = LmCacheServer.start(LOOPBACK, 0, MB, Optional.empty(), MB, limits)) {
            List<SocketChannel> idle = new ArrayList<>();
            for (int i = 0; i < 20; i++) {
                idle.add(open(server));
            }
            awaitOpen(server, 20);
            Thread.sleep(400);
            // at the limit, a new client takes the place of the longest-idle one
            try (LmConnector lm = LmServerConnectorTest.connector(server, "?pool=1")) {
                LmServerConnectorTest.await(lm.ping());
            }
            assertTrue(server.stats().reclaimedConnections() >= 1, server.stats().toString());
            assertTrue(closedByServer(idle.getFirst(), Duration.ofSeconds(5)), "the longest-idle connection was not the one closed");
            // and idle connections are closed after the idle timeout
            for (SocketChannel ch : idle) {
                assertTrue(closedByServer(ch, Duration.ofSeconds(10)), "an idle connection outlived the idle timeout");
                ch.close();
            }
            awaitOpen(server, 0);
        }
        // connections that are all busy are not reclaimed: a newcomer is closed at once, and counted
        LmServerLimits busy = LmServerLimits.defaults().withMaxConnections(5).withReclaimIdleAfter(Duration.ofHours(1));
        try (LmCacheServer server = LmCacheServer.start(LOOPBACK, 0, MB, Optional.empty(), MB, busy)) {
            List<SocketChannel> held = new ArrayList<>();
            for (int i = 0; i < 5; i++) {
                held.add(open(server));
            }
            awaitOpen(server, 5);
            try (SocketChannel extra = open(server)) {
                assertTrue(closedByServer(extra, Duration.ofSeconds(5)));
            }
            assertTrue(server.stats().refusedConnections() >= 1);
            for (SocketChannel ch : held) {
                ch.close();
            }
            awaitOpen(server, 0);
            try (LmConnector lm = LmServerConnectorTest.connector(server, "?pool=1")) {
                LmServerConnectorTest.await(lm.ping());
            }
        }
    }

    @Test
    void wrongTokensAreThrottledServerWide() throws Exception {
        LmServerLimits limits = LmServerLimits.defaults().withAuthFailureDelay(Duration.ofMillis(100))
                .withAuthFailuresPerSecond(20);
        try (LmCacheServer server = LmCacheServer.start(LOOPBACK, 0, MB, Optional.of("right"), MB, limits);
             ExecutorService guessers = Executors.newFixedThreadPool(8)) {
            int guesses = 60;
            AtomicInteger refused = new AtomicInteger();
            long t0 = System.nanoTime();
            List<Future<?>> done = new ArrayList<>();
            for (int g = 0; g < 8; g++) {
                int first = g;
                done.add(guessers.submit(() -> {
                    for (int i = first; i < guesses; i += 8) {
                        try (SocketChannel ch = open(server)) {
                            // A guesser cannot check the server's proof; it sends a guessed proof anyway.
                            LmProtocol.writeFully(ch, ByteBuffer.wrap(LmProtocol.encodeClient(LmProtocol.AUTH_HELLO,
                                    LmSession.NONCE_BYTES, "")), ByteBuffer.wrap(LmSession.nonce()));
                            LmProtocol.readFully(ch, LmProtocol.SERVER_HEADER_BYTES + LmSession.NONCE_BYTES
                                    + LmSession.PROOF_BYTES);
                            byte[] guess = Arrays.copyOf(("guess" + i).getBytes(StandardCharsets.UTF_8), LmSession.PROOF_BYTES);
                            LmProtocol.writeFully(ch, ByteBuffer.wrap(LmProtocol.encodeClient(LmProtocol.AUTH_PROOF,
                                    guess.length, "")), ByteBuffer.wrap(guess));
                            if (LmProtocol.replyCode(LmProtocol.readFully(ch, LmProtocol.SERVER_HEADER_BYTES)) == LmProtocol.FAIL) {
                                refused.incrementAndGet();
                            }
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> f : done) {
                f.get(60, TimeUnit.SECONDS);
            }
            double seconds = (System.nanoTime() - t0) / 1e9;
            assertEquals(guesses, refused.get());
            assertEquals(guesses, server.stats().authFailures());
            // 60 failures at 20/s cannot be answered in less than 59/20 s, however many connections ask
            assertTrue(seconds >= (guesses - 1) / 20.0, "wrong tokens answered at " + guesses / seconds + "/s");
            // the right token is not slowed
            long t1 = System.nanoTime();
            try (LmConnector lm = LmServerConnectorTest.connector(server, "?token=right")) {
                LmServerConnectorTest.await(lm.ping());
            }
            assertTrue(System.nanoTime() - t1 < TimeUnit.SECONDS.toNanos(2));
        }
    }

    @Test
    void aClientThatIgnoresTheFailOfAWrongProofIsNeverServed() throws Exception {
        LmServerLimits limits = LmServerLimits.defaults().withAuthFailureDelay(Duration.ofMillis(10));
        try (LmCacheServer server = LmCacheServer.start(LOOPBACK, 0, 16L * MB, Optional.of("right"), MB, limits);
             LmConnector member = LmServerConnectorTest.connector(server, "?token=right");
             LocalCpuBackend cpu = TestChunks.cpuTier(2, "LRU", 1)) {
            MemoryObj obj = TestChunks.chunk(cpu, 0x5a, AllocationMode.NO_EVICTION).orElseThrow();
            try {
                LmServerConnectorTest.await(member.put(TestChunks.key(7), RemoteMetadata.forObject(obj), obj.segment()));
            } finally {
                obj.release();
            }
            String key = TestChunks.key(7).toKeyString();
            try (SocketChannel ch = open(server)) {
                LmProtocol.writeFully(ch, ByteBuffer.wrap(LmProtocol.encodeClient(LmProtocol.AUTH_HELLO,
                        LmSession.NONCE_BYTES, "")), ByteBuffer.wrap(LmSession.nonce()));
                LmProtocol.readFully(ch, LmProtocol.SERVER_HEADER_BYTES + LmSession.NONCE_BYTES + LmSession.PROOF_BYTES);
                byte[] guess = new byte[LmSession.PROOF_BYTES];
                LmProtocol.writeFully(ch, ByteBuffer.wrap(LmProtocol.encodeClient(LmProtocol.AUTH_PROOF, guess.length, "")),
                        ByteBuffer.wrap(guess));
                assertEquals(LmProtocol.FAIL, LmProtocol.replyCode(LmProtocol.readFully(ch, LmProtocol.SERVER_HEADER_BYTES)));
                // It carries on as if it had passed: a GET of a key the server holds, and an EXIST.
                try {
                    LmProtocol.writeFully(ch, ByteBuffer.wrap(LmProtocol.encodeClient(LmProtocol.GET, 0, key)),
                            ByteBuffer.wrap(LmProtocol.encodeClient(LmProtocol.EXIST, 0, key)));
                } catch (IOException reset) {
                    // the server closed the connection already: nothing was served
                }
                Received after = receiveUntilClosed(ch, Duration.ofSeconds(10));
                assertEquals(0, after.bytes(), "bytes the server sent after its FAIL (a chunk, an EXIST answer)");
                assertTrue(after.closed(), "the server closed the connection after its FAIL");
            }
            assertEquals(1, server.stats().authFailures());
            assertEquals(0, server.stats().gets(), "no GET of the outsider's was served");
        }
    }

    @Test
    void runningOutOfFileDescriptorsDoesNotKillTheAcceptLoop(@TempDir Path tmp) throws Exception {
        // A server process with 256 file descriptors and a connection limit it cannot reach: accept fails with EMFILE.
        Path log = tmp.resolve("server.log");
        List<String> cmd = new ArrayList<>(List.of("bash", "-c", "ulimit -n 256 && exec \"$@\"", "lm-server"));
        cmd.addAll(childJvm(LmServerProcessMain.class.getName(), "100000"));
        Process p = new ProcessBuilder(cmd).redirectError(log.toFile()).start();
        try (BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
             PrintWriter in = new PrintWriter(p.getOutputStream(), true, StandardCharsets.UTF_8)) {
            String first = out.readLine();
            assertTrue(first != null && first.startsWith("port "), "server did not start: " + first + "\n" + Files.readString(log));
            int port = Integer.parseInt(first.split(" ")[1]);
            assertEquals("256", first.split(" ")[3], "the child's file limit");
            in.println("stats"); // once before the flood: the classes it needs are loaded while files can still be opened
            assertTrue(out.readLine().contains("running=true"));
            List<java.net.Socket> flood = new ArrayList<>();
            try {
                int failedInARow = 0;
                for (int i = 0; i < 400 && failedInARow < 5; i++) {
                    java.net.Socket s = new java.net.Socket();
                    flood.add(s);
                    try {
                        s.connect(new InetSocketAddress(LOOPBACK, port), 1000);
                        failedInARow = 0;
                    } catch (IOException e) {
                        failedInARow++; // the accept queue is full
                    }
                }
                Thread.sleep(3000); // the server now fails to accept, over and over
                in.println("stats");
                String during = out.readLine();
                assertTrue(during != null && during.contains("running=true"), during + "\n" + Files.readString(log));
                long errors = Long.parseLong(during.replaceAll(".*acceptErrors=(\\d+).*", "$1"));
                assertTrue(errors > 0, "no accept error with 256 descriptors and 400 connections: " + during);
                // back-off: at most one try per 10 ms at first, then up to 1 s apart, so a few hundred in 3 s at most
                assertTrue(errors < 400, "the accept loop spins: " + during);
            } finally {
                for (java.net.Socket s : flood) {
                    s.close();
                }
            }
            // the clients left: a new client is served again
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            boolean served = false;
            while (!served && System.nanoTime() < deadline) {
                try (LmConnector lm = LmConnector.connect(URI.create("lm://127.0.0.1:" + port + "?timeout_ms=2000&pool=1"))) {
                    lm.ping().get(5, TimeUnit.SECONDS);
                    served = true;
                } catch (Exception notYet) {
                    Thread.sleep(200);
                }
            }
            assertTrue(served, "no client was served after the flood:\n" + Files.readString(log));
            long warnings = Files.readAllLines(log).stream().filter(l -> l.contains("accepting a connection failed")).count();
            assertTrue(warnings <= 10, warnings + " log lines for accept errors in a few seconds (rate limit is one per 5 s)");
        } finally {
            p.destroy();
            p.waitFor(10, TimeUnit.SECONDS);
            p.destroyForcibly();
        }
    }

    private static void awaitOpen(LmCacheServer server, long n) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (server.stats().openConnections() != n && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        assertEquals(n, server.stats().openConnections(), server.stats().toString());
    }

    /** A child JVM running {@code main} with this test's module path (or class path), test classes patched in. */
    static List<String> childJvm(String main, String... args) throws URISyntaxException {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        Path testClasses = Path.of(LmServerProcessMain.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        List<String> cmd = new ArrayList<>(List.of(java, "-Xmx256m"));
        String modulePath = System.getProperty("jdk.module.path");
        if (modulePath != null && !modulePath.isEmpty()) {
            cmd.addAll(List.of("--enable-native-access=lmcache4j.cuda", "--illegal-native-access=deny",
                    "-p", modulePath, "--patch-module", "lmcache4j.server=" + testClasses, "-m", "lmcache4j.server/" + main));
        } else {
            cmd.addAll(List.of("--enable-native-access=ALL-UNNAMED",
                    "-cp", testClasses + File.pathSeparator + System.getProperty("java.class.path"), main));
        }
        cmd.addAll(List.of(args));
        return cmd;
    }

    /** Sleeps without the checked exception, for polling loops. */
    private static final class LockSupportSleep {
        static void millis(long ms) {
            java.util.concurrent.locks.LockSupport.parkNanos(ms * 1_000_000);
        }
    }
}
