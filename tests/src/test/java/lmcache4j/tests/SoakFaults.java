package lmcache4j.tests;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SplittableRandom;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import lmcache4j.allocator.DType;
import lmcache4j.allocator.MemoryFormat;
import lmcache4j.allocator.MemoryObj;
import lmcache4j.allocator.TensorShape;
import lmcache4j.engine.storage.AllocationMode;
import lmcache4j.engine.storage.CpuTier;

/**
 * The soak's faults, injected at random points of the workload (one every {@code 20..120}
 * operations, drawn from the soak's seed): the remote server killed (and started again, empty, a
 * while later), a chunk file of the disk tier with a byte flipped or cut short, a burst of
 * allocations holding half the CPU tier for a while, and the CPU tier flushed so that the next
 * requests read from disk and remote.
 */
final class SoakFaults implements AutoCloseable {
    enum Kind {
        REMOTE_KILLED, REMOTE_RESTARTED, DISK_BYTE_FLIPPED, DISK_FILE_TRUNCATED, MEMORY_BURST, CPU_TIER_FLUSHED
    }

    /** The faults injected at random (a restart follows each kill by itself). */
    private static final Kind[] INJECTED = {Kind.REMOTE_KILLED, Kind.DISK_BYTE_FLIPPED, Kind.DISK_FILE_TRUNCATED,
        Kind.MEMORY_BURST, Kind.CPU_TIER_FLUSHED};

    /** What an allocation burst allocates: one chunk's worth per object. */
    record Chunk(TensorShape shape, DType dtype, MemoryFormat format) {
    }

    private final SplittableRandom random;
    private final RestartableLmServer server;
    private final Path diskDir;
    private final CpuTier cpu;
    private final Chunk chunk;
    private final int burstObjects;
    private final Map<Kind, Integer> counts = new EnumMap<>(Kind.class);
    private final Deque<String> recent = new ArrayDeque<>();
    private final List<MemoryObj> burst = new ArrayList<>();
    private long nextFaultAt;
    private long restartAt = -1;
    private long burstEndsAt = -1;

    SoakFaults(SplittableRandom random, long firstFaultAt, RestartableLmServer server, Path diskDir, CpuTier cpu,
               Chunk chunk, int burstObjects) {
        this.random = random;
        this.nextFaultAt = firstFaultAt;
        this.server = server;
        this.diskDir = diskDir;
        this.cpu = cpu;
        this.chunk = chunk;
        this.burstObjects = burstObjects;
    }

    /** Called after operation {@code op}: ends faults whose time has come, and maybe injects one. */
    void afterOp(long op) throws IOException, InterruptedException {
        if (restartAt >= 0 && op >= restartAt) {
            server.restart();
            restartAt = -1;
            record(op, Kind.REMOTE_RESTARTED, "");
        }
        if (burstEndsAt >= 0 && op >= burstEndsAt) {
            releaseBurst();
        }
        if (op < nextFaultAt) {
            return;
        }
        nextFaultAt = op + random.nextInt(20, 120);
        switch (INJECTED[random.nextInt(INJECTED.length)]) {
            case REMOTE_KILLED -> {
                if (server.isUp()) {
                    server.kill();
                    restartAt = op + random.nextInt(20, 200);
                    record(op, Kind.REMOTE_KILLED, "back at op " + restartAt);
                }
            }
            case DISK_BYTE_FLIPPED -> damageDiskFile(op, false);
            case DISK_FILE_TRUNCATED -> damageDiskFile(op, true);
            case MEMORY_BURST -> {
                if (burst.isEmpty()) {
                    holdMemory(op);
                }
            }
            case CPU_TIER_FLUSHED -> record(op, Kind.CPU_TIER_FLUSHED, cpu.clear() + " tokens dropped");
            case REMOTE_RESTARTED -> throw new AssertionError("a restart is scheduled by a kill, not drawn");
        }
    }

    /** Whether an allocation burst holds CPU memory now (a retrieve may then time out waiting for memory). */
    boolean burstActive() {
        return !burst.isEmpty();
    }

    /** Ends every fault: the burst's memory released, the server running. */
    void heal() throws IOException, InterruptedException {
        releaseBurst();
        if (!server.isUp()) {
            server.restart();
            record(-1, Kind.REMOTE_RESTARTED, "at the end");
        }
        restartAt = -1;
        nextFaultAt = Long.MAX_VALUE;
    }

    int count(Kind kind) {
        return counts.getOrDefault(kind, 0);
    }

    int total() {
        return counts.values().stream().mapToInt(Integer::intValue).sum();
    }

    String summary() {
        return counts.entrySet().stream().map(e -> e.getKey().name().toLowerCase(java.util.Locale.ROOT) + " " + e.getValue())
                .collect(Collectors.joining(", "));
    }

    /** The last faults, newest last: for a failure message. */
    String recent() {
        return String.join("; ", recent);
    }

    private void holdMemory(long op) {
        while (burst.size() < burstObjects) {
            Optional<MemoryObj> obj = cpu.allocate(chunk.shape(), chunk.dtype(), chunk.format(), AllocationMode.EVICT);
            if (obj.isEmpty()) {
                break;
            }
            burst.add(obj.get());
        }
        burstEndsAt = op + random.nextInt(10, 60);
        record(op, Kind.MEMORY_BURST, burst.size() + " chunks held until op " + burstEndsAt);
    }

    private void releaseBurst() {
        burst.forEach(MemoryObj::release);
        burst.clear();
        burstEndsAt = -1;
    }

    private void damageDiskFile(long op, boolean truncate) throws IOException {
        List<Path> files;
        try (Stream<Path> list = Files.list(diskDir)) { // names only: the tier deletes files meanwhile
            files = list.filter(f -> f.getFileName().toString().endsWith(".lmc")).sorted().toList();
        }
        if (files.isEmpty()) {
            return;
        }
        Path victim = files.get(random.nextInt(files.size()));
        try (FileChannel ch = FileChannel.open(victim, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            long size = ch.size();
            if (size == 0) {
                return;
            }
            if (truncate) {
                long length = random.nextLong(size);
                ch.truncate(length);
                record(op, Kind.DISK_FILE_TRUNCATED, victim.getFileName() + " to " + length + " of " + size + " bytes");
            } else {
                long at = random.nextLong(size);
                ByteBuffer b = ByteBuffer.allocate(1);
                ch.read(b, at);
                b.put(0, (byte) (b.get(0) ^ (1 << random.nextInt(8))));
                b.rewind();
                ch.write(b, at);
                record(op, Kind.DISK_BYTE_FLIPPED, victim.getFileName() + " at byte " + at + " of " + size);
            }
        } catch (NoSuchFileException e) {
            // evicted or dropped by the tier meanwhile: nothing to damage
        } catch (IOException e) {
            throw new UncheckedIOException("damaging " + victim + " failed", e);
        }
    }

    private void record(long op, Kind kind, String detail) {
        counts.merge(kind, 1, Integer::sum);
        recent.addLast("op " + op + " " + kind + (detail.isEmpty() ? "" : " (" + detail + ")"));
        if (recent.size() > 12) {
            recent.removeFirst();
        }
    }

    @Override
    public void close() {
        releaseBurst();
    }
}
