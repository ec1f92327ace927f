package lmcache4j.tests;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;

import lmcache4j.engine.config.LMCacheEngineConfig;
import lmcache4j.engine.lookup.LookupClient;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;
import lmcache4j.engine.zmq.OwnedZContext;

/**
 * The lookup service across two processes on loopback tcp://: this JVM is the scheduler (a
 * {@link LookupClient}), a child JVM is the worker ({@link LookupWorkerMain}: an engine with a disk
 * tier and its lookup server). An asynchronous lookup prefetches the prompt from disk and the
 * worker's retrieve consumes it byte for byte; a prefetch never consumed is released after
 * {@code pin_timeout_sec}; junk sent to the worker's socket is counted and dropped while lookups
 * go on being answered; and the worker's engine closes without a leak (its exit status).
 */
class LookupServiceProcessTest {
    private static final int TOKENS = 256;

    static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    @Test
    void aSchedulerProcessLooksUpAndTheWorkerProcessRetrievesThePrefetch(@TempDir Path dir) throws Exception {
        String scheduler = "tcp://127.0.0.1:" + freePort();
        String worker = "tcp://127.0.0.1:" + freePort();
        LMCacheEngineConfig config = LookupWorkerMain.config(scheduler, worker, dir.resolve("unused"), 1);
        try (LookupWorkerProcess w = new LookupWorkerProcess(dir, scheduler, worker, dir.resolve("disk").toString(), "1");
             LookupClient client = LookupClient.open(config, LookupWorkerMain.MODEL)) {
            w.await("ready");
            assertEquals(TOKENS, ((Number) w.ask("store 1 " + TOKENS, "stored").get("tokens")).intValue());
            assertEquals(TOKENS, ((Number) w.ask("store 2 " + TOKENS, "stored").get("tokens")).intValue());

            // consumed: lookup → prefetch from disk → the retrieve takes the prefetched chunks
            int[] first = LookupWorkerMain.prompt(1, TOKENS);
            assertEquals(TOKENS, client.lookupBlocking(first, "req-1", Map.of(), Duration.ofSeconds(20)));
            Map<String, Object> retrieved = w.ask("retrieve 1 " + TOKENS + " req-1", "retrieved");
            assertEquals(TOKENS, ((Number) retrieved.get("loaded")).intValue(), retrieved.toString());
            assertEquals(0, ((Number) retrieved.get("mismatches")).intValue(), retrieved.toString());
            assertEquals(TOKENS / LookupWorkerMain.CHUNK, ((Number) retrieved.get("fromPrefetch")).intValue());

            // never consumed: the prefetch of req-2 is released after pin_timeout_sec (1 s)
            int[] second = LookupWorkerMain.prompt(2, TOKENS);
            assertEquals(TOKENS, client.lookupBlocking(second, "req-2", Map.of(), Duration.ofSeconds(20)));
            Map<String, Object> stats = w.ask("stats", "stats");
            assertEquals(1, ((Number) stats.get("held")).intValue(), stats.toString());
            long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
            while (((Number) stats.get("expired")).intValue() == 0 && System.nanoTime() < deadline) {
                Thread.sleep(200);
                stats = w.ask("stats", "stats");
            }
            assertEquals(1, ((Number) stats.get("expired")).intValue(), stats.toString());
            assertEquals(0, ((Number) stats.get("held")).intValue(), stats.toString());

            // junk on the worker's socket is dropped; the next lookup is answered
            int junk = sendJunk(worker, 500);
            int[] third = LookupWorkerMain.prompt(3, TOKENS);
            assertEquals(0, client.lookupBlocking(third, "req-3", Map.of(), Duration.ofSeconds(20)), "never stored");
            assertEquals(TOKENS, client.lookupBlocking(first, "req-4", Map.of(), Duration.ofSeconds(20)));
            stats = w.ask("stats", "stats");
            deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
            while ((((Number) stats.get("malformed")).intValue() < junk || ((Number) stats.get("answered")).intValue() < 4)
                    && System.nanoTime() < deadline) {
                // The junk came on another connection: it may still be queued. And the server counts an
                // answer once its send returns, which can be after the client has it.
                Thread.sleep(100);
                stats = w.ask("stats", "stats");
            }
            assertEquals(junk, ((Number) stats.get("malformed")).intValue(), stats.toString());
            assertEquals(4, ((Number) stats.get("answered")).intValue(), stats.toString());
            assertEquals(0, client.stats().timedOut());

            assertEquals(0, w.finish(), "the worker's engine closed with req-4's prefetch held, and leaked nothing\n"
                    + w.stderr());
        }
    }

    /** Multipart messages that are never a valid lookup (the hash frame is never msgpack); returns how many. */
    static int sendJunk(String url, int messages) throws InterruptedException {
        Random random = new Random(41);
        try (ZContext context = new OwnedZContext("test-lookup-service-process", 1)) {
            ZMQ.Socket push = context.createSocket(SocketType.PUSH);
            push.setLinger(5000);
            push.connect(url);
            for (int m = 0; m < messages; m++) {
                int n = 1 + random.nextInt(8);
                List<byte[]> frames = new ArrayList<>();
                for (int f = 0; f < n; f++) {
                    byte[] frame = new byte[random.nextInt(24)];
                    random.nextBytes(frame);
                    frames.add(frame);
                }
                if (n % 4 == 0) {
                    frames.set(1, new byte[]{(byte) 0xc1}); // 0xc1 is never msgpack
                }
                for (int f = 0; f < n; f++) {
                    push.send(frames.get(f), f < n - 1 ? ZMQ.SNDMORE : 0);
                }
            }
        }
        return messages;
    }
}
