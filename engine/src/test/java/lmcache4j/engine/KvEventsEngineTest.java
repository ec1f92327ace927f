package lmcache4j.engine;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.msgpack.core.MessagePack;
import org.msgpack.core.MessageUnpacker;
import org.msgpack.value.ValueType;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;
import org.zeromq.ZMsg;

import lmcache4j.engine.config.ConfigLoader;
import lmcache4j.engine.connector.KvConnector;
import lmcache4j.engine.connector.PagedKvCache;
import lmcache4j.engine.controller.ControllerKeys;
import lmcache4j.engine.key.ChunkHasher;
import lmcache4j.engine.key.HashAlgorithm;
import lmcache4j.engine.zmq.OwnedZContext;

/**
 * An engine's KV events as a router decodes them (vLLM's msgpack batches): the parent of each
 * stored chunk is the chunk before it, and {@code AllBlocksCleared} comes only when a clear left
 * every tier empty. The batches are read from the replay socket, from seq 0, as a router that
 * missed some reads them: a subscription only starts the publisher (it holds its first batches
 * for a subscriber), since live PUB/SUB delivery may lose what was sent into a connection JeroMQ
 * then remade. (The tests module's {@code KvEventsTest} decodes the same batches with vLLM's own
 * msgspec classes, live and replayed.)
 */
@Timeout(120)
class KvEventsEngineTest {
    private static final int CHUNK = 64;
    private static final String CPU = "LocalCPUBackend";
    private static final String DISK = "LocalDiskBackend";

    @TempDir
    Path tmp;

    /** One decoded event: its type, block hashes, parent (null: none), tokens and medium. */
    private record Event(String type, long[] hashes, Long parent, int[] tokens, String medium) {
        @Override
        public String toString() {
            return type + (medium == null ? "" : "(" + medium + ", " + Arrays.toString(hashes) + ", parent " + parent + ", "
                    + tokens.length + " tokens)");
        }
    }

    @Test
    void eachStoredChunksParentIsTheChunkBeforeItAndItsTokensAreItsOwn() throws Exception {
        try (ZContext context = new OwnedZContext("test-kv-events-engine", 1); Arena arena = Arena.ofShared()) {
            int[] ports = freePorts();
            int[] tokens = new Random(5).ints(3 * CHUNK + 10, 0, 50_000).toArray();
            try (LMCacheEngine engine = engine(ports, false)) {
                Reader sub = new Reader(context, ports);
                store(engine, arena, tokens);
                long[] hashes = hashes(engine, tokens);
                List<Event> stored = sub.readUntil(all -> blocks(all, "BlockStored", "CPU").size() >= 3);
                List<Event> cpu = stored.stream().filter(e -> e.type().equals("BlockStored") && "CPU".equals(e.medium()))
                        .toList();
                assertEquals(3, cpu.size(), stored.toString());
                for (int i = 0; i < 3; i++) {
                    Event e = cpu.get(i);
                    assertArrayEquals(new long[] {hashes[i]}, e.hashes(), "chunk " + i + "'s vLLM-folded hash");
                    assertEquals(i == 0 ? null : hashes[i - 1], e.parent(), i == 0 ? "the first chunk has no parent"
                            : "chunk " + i + "'s parent is chunk " + (i - 1));
                    assertArrayEquals(Arrays.copyOfRange(tokens, i * CHUNK, (i + 1) * CHUNK), e.tokens(), "chunk " + i);
                }
            }
        }
    }

    @Test
    void allBlocksClearedOnlyOnceEveryTierIsEmpty() throws Exception {
        try (ZContext context = new OwnedZContext("test-kv-events-engine", 1); Arena arena = Arena.ofShared()) {
            int[] ports = freePorts();
            int[] tokens = new Random(6).ints(2 * CHUNK, 0, 50_000).toArray();
            try (LMCacheEngine engine = engine(ports, true)) {
                Reader sub = new Reader(context, ports);
                store(engine, arena, tokens);
                sub.readUntil(all -> blocks(all, "BlockStored", "DISK").size() >= 2); // written to disk too
                assertEquals(2 * CHUNK, engine.lookup(tokens, Map.of(), "pinned"), "the lookup pins both chunks in the CPU tier");

                engine.clear(); // the disk empties; the CPU tier keeps what the lookup pinned
                Map<String, List<lmcache4j.engine.key.CacheKey>> resident = engine.storage().residentKeys();
                assertEquals(2, resident.get(CPU).size(), "the pinned chunks stay: " + resident);
                assertTrue(resident.get(DISK).isEmpty(), "the disk tier is empty: " + resident);

                engine.lookupUnpin("pinned");
                engine.clear(); // now every tier is empty
                List<Event> after = sub.readUntil(all -> all.stream().anyMatch(e -> e.type().equals("AllBlocksCleared"))
                        && blocks(all, "BlockRemoved", "CPU").size() >= 2);
                int cleared = 0;
                int cpuRemoved = 0;
                for (Event e : after) {
                    if (e.type().equals("AllBlocksCleared")) {
                        cleared++;
                        assertEquals(2, cpuRemoved, "AllBlocksCleared came while the CPU tier still held "
                                + (2 - cpuRemoved) + " chunk(s): " + after);
                    } else if (e.type().equals("BlockRemoved") && "CPU".equals(e.medium())) {
                        cpuRemoved += e.hashes().length;
                    }
                }
                assertEquals(1, cleared, "one AllBlocksCleared, for the clear that emptied the engine: " + after);
                assertEquals("AllBlocksCleared", after.getLast().type(), after.toString());
            }
        }
    }

    // ---- the engine and its subscriber -----------------------------------------------------------

    /** Two free loopback ports: the publisher's (it binds, as vLLM's default does) and the replay socket's. */
    private static int[] freePorts() throws IOException {
        try (ServerSocket a = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
             ServerSocket b = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return new int[] {a.getLocalPort(), b.getLocalPort()};
        }
    }

    private LMCacheEngine engine(int[] ports, boolean disk) {
        ConfigLoader.Builder config = ConfigLoader.builder().environment(Map.of())
                .set("chunk_size", CHUNK).set("max_local_cpu_size", 0.01).set("hash_seed", "0")
                .set("kv_events_endpoint", "tcp://*:" + ports[0]).set("kv_events_topic", "kv@engine")
                .set("kv_events_replay_endpoint", "tcp://127.0.0.1:" + ports[1]);
        if (disk) {
            config.set("local_disk", tmp.resolve("disk").toString()).set("max_local_disk_size", 0.01);
        }
        return LMCacheEngine.create(config.build(), SyntheticKv.model(), KvConnector.host(), List.of());
    }

    private static void store(LMCacheEngine engine, Arena arena, int[] tokens) {
        int blocks = 64;
        PagedKvCache kv = SyntheticKv.cache(arena, blocks);
        long[] slots = SyntheticKv.slots(tokens.length, blocks, 1);
        SyntheticKv.compute(kv, tokens, slots, 0, tokens.length);
        int chunks = tokens.length / CHUNK;
        assertEquals(chunks * CHUNK, engine.store(tokens, null, kv, slots, Map.of()));
    }

    /**
     * vLLM's block hash of each full chunk of {@code tokens}: the digest chain at block size = chunk
     * size, folded (the storage keys carry LMCache's integer chain, which events never do).
     */
    private static long[] hashes(LMCacheEngine engine, int[] tokens) {
        assertTrue(engine.prepare(tokens, Map.of()).chunks().getFirst().key().chunkHash().isInteger(),
                "storage keys in LMCache's current form");
        return ChunkHasher.seeded(HashAlgorithm.SHA256_CBOR, "0").chain(tokens, CHUNK, false).stream()
                .mapToLong(ControllerKeys::vllmFold).toArray();
    }

    private static List<Event> blocks(List<Event> events, String type, String medium) {
        return events.stream().filter(e -> e.type().equals(type) && medium.equals(e.medium())).toList();
    }

    /** A router's view of the engine's events: a subscription, and the replay socket it reads them from. */
    private static final class Reader {
        private final ZContext context;
        private final int replayPort;
        private final ZMQ.Socket sub;
        private ZMQ.Socket replay;

        Reader(ZContext context, int[] ports) {
            this.context = context;
            this.replayPort = ports[1];
            sub = context.createSocket(SocketType.SUB);
            sub.setLinger(0);
            sub.subscribe("kv@engine".getBytes(StandardCharsets.UTF_8));
            sub.connect("tcp://127.0.0.1:" + ports[0]);
        }

        /** Every event from seq 0, replayed until {@code done} holds for them (at most 30 s). */
        List<Event> readUntil(Predicate<List<Event>> done) throws IOException, InterruptedException {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            List<Event> events = List.of();
            while (true) {
                while (sub.recv(ZMQ.DONTWAIT) != null) {
                    // live batches are not read: calling the socket lets JeroMQ send the subscription
                }
                events = replayAll().orElse(events);
                if (done.test(events)) {
                    return events;
                }
                if (System.nanoTime() > deadline) {
                    fail("the events never came; got " + events);
                }
                Thread.sleep(50);
            }
        }

        /** The batches the replay socket holds, from seq 0, in order; empty when it did not answer within 3 s. */
        private java.util.Optional<List<Event>> replayAll() throws IOException {
            if (replay == null) {
                replay = context.createSocket(SocketType.DEALER);
                replay.setLinger(0);
                replay.setReceiveTimeOut(3_000);
                replay.connect("tcp://127.0.0.1:" + replayPort);
            }
            replay.sendMore(new byte[0]);
            replay.send(ByteBuffer.allocate(8).putLong(0).array());
            List<Event> events = new ArrayList<>();
            long expected = 0;
            while (true) {
                ZMsg reply = ZMsg.recvMsg(replay);
                if (reply == null) { // no answer: a stalled connection; the next try makes a new one
                    context.destroySocket(replay);
                    replay = null;
                    return java.util.Optional.empty();
                }
                assertEquals(3, reply.size(), "[empty, seq, payload]");
                reply.pop();
                long seq = ByteBuffer.wrap(reply.pop().getData()).getLong();
                if (seq == -1) {
                    return java.util.Optional.of(events);
                }
                assertEquals(expected++, seq, "replayed batches come in order, none missing");
                events.addAll(decode(reply.pop().getData()));
            }
        }
    }

    /** A batch {@code [timestamp, [event...], data_parallel_rank]}. */
    private static List<Event> decode(byte[] batch) throws IOException {
        List<Event> events = new ArrayList<>();
        try (MessageUnpacker in = MessagePack.newDefaultUnpacker(batch)) {
            assertEquals(3, in.unpackArrayHeader());
            in.unpackDouble();
            int n = in.unpackArrayHeader();
            for (int i = 0; i < n; i++) {
                int fields = in.unpackArrayHeader();
                String type = in.unpackString();
                switch (type) {
                    case "BlockStored" -> {
                        long[] hashes = longs(in);
                        Long parent = null;
                        if (in.getNextFormat().getValueType() == ValueType.NIL) {
                            in.unpackNil();
                        } else {
                            parent = uint64(in);
                        }
                        int[] tokens = new int[in.unpackArrayHeader()];
                        for (int t = 0; t < tokens.length; t++) {
                            tokens[t] = in.unpackInt();
                        }
                        in.unpackInt(); // block_size
                        in.unpackNil(); // lora_id
                        String medium = in.unpackString();
                        for (int f = 7; f < fields; f++) {
                            in.skipValue();
                        }
                        events.add(new Event(type, hashes, parent, tokens, medium));
                    }
                    case "BlockRemoved" -> {
                        long[] hashes = longs(in);
                        String medium = in.unpackString();
                        for (int f = 3; f < fields; f++) {
                            in.skipValue();
                        }
                        events.add(new Event(type, hashes, null, new int[0], medium));
                    }
                    default -> {
                        for (int f = 1; f < fields; f++) {
                            in.skipValue();
                        }
                        events.add(new Event(type, new long[0], null, new int[0], null));
                    }
                }
            }
            in.skipValue(); // data_parallel_rank
        }
        return events;
    }

    private static long[] longs(MessageUnpacker in) throws IOException {
        long[] out = new long[in.unpackArrayHeader()];
        for (int i = 0; i < out.length; i++) {
            out[i] = uint64(in);
        }
        return out;
    }

    /** An unsigned 64-bit integer, kept in a long's bits (as the engine folds hashes). */
    private static long uint64(MessageUnpacker in) throws IOException {
        return in.unpackBigInteger().longValue();
    }

    @Test
    void theDecoderHereReadsWhatTheCodecWrites() throws IOException {
        List<Event> events = decode(lmcache4j.engine.events.KvEventCodec.batch(1.0, List.of(
                new lmcache4j.engine.events.KvEvent.BlockStored(new long[] {-2L}, java.util.OptionalLong.of(-3L),
                        new int[] {4, 5}, 64, "DISK"),
                new lmcache4j.engine.events.KvEvent.AllBlocksCleared())));
        assertEquals(2, events.size());
        assertArrayEquals(new long[] {-2L}, events.get(0).hashes());
        assertEquals(-3L, events.get(0).parent());
        assertArrayEquals(new int[] {4, 5}, events.get(0).tokens());
        assertEquals("DISK", events.get(0).medium());
        assertEquals("AllBlocksCleared", events.get(1).type());
        assertNull(events.get(1).medium());
    }
}
