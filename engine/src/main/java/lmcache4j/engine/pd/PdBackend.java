package lmcache4j.engine.pd;

import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.LongSupplier;

import lmcache4j.allocator.DType;
import lmcache4j.allocator.HostArenaOptions;
import lmcache4j.allocator.MemoryAllocator;
import lmcache4j.allocator.MemoryFormat;
import lmcache4j.allocator.MemoryObj;
import lmcache4j.allocator.TensorShape;
import lmcache4j.allocator.host.HostArena;
import lmcache4j.allocator.internal.threads.OwnedThreads;
import lmcache4j.allocator.tensor.TensorMemoryAllocator;
import lmcache4j.engine.ModelMetadata;
import lmcache4j.engine.config.PdSettings;
import lmcache4j.engine.key.CacheEngineKey;
import lmcache4j.engine.key.CacheKey;
import lmcache4j.engine.pd.wire.AllocRequest;
import lmcache4j.engine.pd.wire.AllocResponse;
import lmcache4j.engine.pd.wire.PdRooms;
import lmcache4j.engine.storage.AllocationMode;
import lmcache4j.engine.storage.MemoryProvider;
import lmcache4j.engine.storage.StorageBackend;

/**
 * The decoder's PD tier (LMCache's {@code PDBackend} on the receiver side): a bounded buffer of host
 * memory (lmcache4j's allocator over one arena of {@code pd_buffer_size}, CUDA-pinned when the runtime
 * is available) into which senders push a request's chunks, and which the decoder's retrieves read.
 *
 * <ul>
 *   <li><b>Allocation never blocks.</b> {@link #allocate} takes room for each chunk it does not hold;
 *       when the buffer is full the chunk, and every later chunk of the request, is refused
 *       ({@link AllocResponse#REFUSED}): the decoder computes what did not arrive. A request whose
 *       shape, dtype, format or keys are not this engine's model is refused whole.</li>
 *   <li><b>Only landed chunks are seen.</b> A chunk becomes visible to lookups once its write has
 *       arrived whole and its tag checked ({@link Landing#landed()}); room allocated but not written
 *       within {@code pd_timeout_ms} (a sender that died) is freed.</li>
 *   <li><b>Released after its retrieve.</b> Each allocation request that lists a chunk claims it
 *       once; a retrieve consumes one claim, copying the chunk into the CPU tier's memory when it can
 *       (so the PD room is free at once), and the chunk leaves when no claim is left. A landed chunk
 *       that no retrieve read within {@code pd_unclaimed_ttl_ms} is freed, unless a lookup pins it.</li>
 * </ul>
 *
 * <p>Thread-safe. {@link #close()} releases every chunk and closes the buffer (its leak check).
 */
public final class PdBackend implements StorageBackend {
    /** LMCache's name for the tier. */
    public static final String NAME = "PDBackend";
    private static final System.Logger LOG = System.getLogger(PdBackend.class.getName());

    static { // the receive server's access to the room operations, which stay off this class's public face
        PdRooms.handOver(tier -> tier.rooms);
    }

    /**
     * Counters, a snapshot.
     *
     * @param allocatedChunks   chunks given room
     * @param alreadySentChunks chunks an allocation request listed that were held or arriving already
     * @param refusedChunks     chunks refused because the buffer was full
     * @param refusedRequests   allocation requests refused whole (another model's shape, dtype or keys)
     * @param landedChunks      chunks whose write arrived with a good tag
     * @param landedBytes       their bytes
     * @param tagFailures       writes whose tag was wrong (or that broke off): their room freed, nothing served
     * @param lateWrites        writes to a slot that was not waiting for one (expired, unknown, other size)
     * @param expiredPending    rooms freed because their write did not come in time
     * @param expiredUnclaimed  landed chunks freed because no retrieve read them in time
     * @param servedChunks      chunks retrieves read
     * @param heldChunks        chunks held now (waiting for their write, or landed)
     * @param usedBytes         buffer bytes in use now
     * @param capacityBytes     the buffer's size
     */
    public record Stats(long allocatedChunks, long alreadySentChunks, long refusedChunks, long refusedRequests,
                        long landedChunks, long landedBytes, long tagFailures, long lateWrites, long expiredPending,
                        long expiredUnclaimed, long servedChunks, int heldChunks, long usedBytes, long capacityBytes) {
    }

    private enum State { PENDING, WRITING, LANDED }

    private static final class Slot {
        final long id;
        final CacheEngineKey key;
        final MemoryObj obj;
        State state = State.PENDING;
        int claims = 1;
        int pins;
        long deadline;

        Slot(long id, CacheEngineKey key, MemoryObj obj, long deadline) {
            this.id = id;
            this.key = key;
            this.obj = obj;
            this.deadline = deadline;
        }
    }

    private final PdRooms rooms = new PdRooms() {
        @Override
        public AllocResponse allocate(AllocRequest request) {
            return PdBackend.this.allocate(request);
        }

        @Override
        public Optional<PdRooms.Landing> beginWrite(long slotId, long payloadBytes) {
            return PdBackend.this.beginWrite(slotId, payloadBytes).map(PdRooms.Landing.class::cast);
        }
    };
    private final MemoryAllocator buffer;
    private final MemoryProvider copyTarget;
    private final ModelMetadata metadata;
    private final int chunkSize;
    private final long timeoutNanos;
    private final long unclaimedTtlNanos;
    private final LongSupplier clock;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition closing = lock.newCondition();
    private final Map<CacheKey, Slot> byKey = new HashMap<>();
    private final Map<Long, Slot> bySlot = new HashMap<>();
    private final OwnedThreads threads = new OwnedThreads();
    private long nextSlot = 1;
    private boolean closed;

    private final AtomicLong allocated = new AtomicLong();
    private final AtomicLong alreadySent = new AtomicLong();
    private final AtomicLong refused = new AtomicLong();
    private final AtomicLong refusedRequests = new AtomicLong();
    private final AtomicLong landed = new AtomicLong();
    private final AtomicLong landedBytes = new AtomicLong();
    private final AtomicLong tagFailures = new AtomicLong();
    private final AtomicLong lateWrites = new AtomicLong();
    private final AtomicLong expiredPending = new AtomicLong();
    private final AtomicLong expiredUnclaimed = new AtomicLong();
    private final AtomicLong served = new AtomicLong();

    /**
     * A tier over {@code buffer} (owned from now on) for {@code metadata}'s model in chunks of
     * {@code chunkSize} tokens, copying what retrieves read into {@code copyTarget}'s memory, timing
     * with {@code clock} (nanoseconds); {@code sweep} is how often expired room is looked for.
     */
    PdBackend(MemoryAllocator buffer, ModelMetadata metadata, int chunkSize, MemoryProvider copyTarget, Duration timeout,
              Duration unclaimedTtl, LongSupplier clock, Duration sweep) {
        this.buffer = Objects.requireNonNull(buffer, "buffer");
        this.metadata = Objects.requireNonNull(metadata, "metadata");
        this.copyTarget = Objects.requireNonNull(copyTarget, "copyTarget");
        if (chunkSize < 1) {
            throw new IllegalArgumentException("chunk size must be positive, got " + chunkSize);
        }
        this.chunkSize = chunkSize;
        this.timeoutNanos = timeout.toNanos();
        this.unclaimedTtlNanos = unclaimedTtl.toNanos();
        this.clock = clock;
        if (!sweep.isZero()) {
            threads.start("pd-buffer-sweep", () -> sweepLoop(sweep));
        }
    }

    /**
     * The tier of a decoder's engine ({@code pd_role: receiver}): a buffer of {@code pd_buffer_size}
     * bytes of host memory, prefaulted, CUDA-pinned when the runtime is available.
     */
    public static PdBackend create(PdSettings settings, ModelMetadata metadata, int chunkSize, MemoryProvider copyTarget) {
        if (settings.role() != PdSettings.Role.RECEIVER) {
            throw new IllegalArgumentException("the PD tier is the receiver's (pd_role: receiver), not the " + settings.role());
        }
        long chunkBytes = metadata.chunkBytes(chunkSize);
        if (settings.bufferBytes() < chunkBytes) {
            throw new IllegalArgumentException("pd_buffer_size " + settings.bufferBytes() + " holds no full chunk of "
                    + chunkBytes + " bytes (" + metadata.numLayers() + " layers × " + chunkSize + " tokens)");
        }
        HostArena arena = HostArena.allocate(settings.bufferBytes(), HostArenaOptions.DEFAULT.withPrefault(true));
        MemoryAllocator buffer = TensorMemoryAllocator.create(NAME, arena, TensorMemoryAllocator.DEFAULT_ALIGNMENT);
        long sweepMillis = Math.clamp(Math.min(settings.timeout().toMillis(), settings.unclaimedTtl().toMillis()) / 4, 10, 1_000);
        return new PdBackend(buffer, metadata, chunkSize, copyTarget, settings.timeout(), settings.unclaimedTtl(),
                System::nanoTime, Duration.ofMillis(sweepMillis));
    }

    @Override
    public String name() {
        return NAME;
    }

    // ---- the sender's side: allocation and writes -----------------------------------------------

    /** {@link PdRooms#allocate}. */
    AllocResponse allocate(AllocRequest request) {
        Optional<String> wrong = check(request);
        if (wrong.isPresent()) {
            refusedRequests.incrementAndGet();
            return AllocResponse.refused(wrong.get());
        }
        List<CacheEngineKey> keys = new ArrayList<>(request.keys().size());
        for (String k : request.keys()) {
            keys.add(CacheEngineKey.parse(k));
        }
        TensorShape full = TensorShape.of(request.shape().stream().mapToInt(Integer::intValue).toArray());
        DType dtype = metadata.kvDtype();
        List<Integer> already = new ArrayList<>();
        List<Long> remote = new ArrayList<>();
        lock.lock();
        try {
            ensureOpen();
            long now = clock.getAsLong();
            sweep(now);
            boolean full0 = false;
            for (int i = 0; i < keys.size(); i++) {
                Slot held = byKey.get(keys.get(i));
                if (held != null) {
                    held.claims++;
                    if (held.state == State.LANDED) {
                        held.deadline = Math.max(held.deadline, now + unclaimedTtlNanos);
                    }
                    already.add(i);
                    alreadySent.incrementAndGet();
                    continue;
                }
                if (full0) {
                    remote.add(AllocResponse.REFUSED);
                    refused.incrementAndGet();
                    continue;
                }
                int tokens = i == keys.size() - 1 ? request.lastChunkToks() : chunkSize;
                Optional<MemoryObj> obj = buffer.allocate(full.withDim(2, tokens), dtype, MemoryFormat.KV_2LTD);
                if (obj.isEmpty()) {
                    full0 = true; // a retrieve stops at the first missing chunk: the later ones would be of no use
                    remote.add(AllocResponse.REFUSED);
                    refused.incrementAndGet();
                    continue;
                }
                Slot s = new Slot(nextSlot++, keys.get(i), obj.get(), now + timeoutNanos);
                byKey.put(s.key, s);
                bySlot.put(s.id, s);
                remote.add(s.id);
                allocated.incrementAndGet();
            }
        } finally {
            lock.unlock();
        }
        return new AllocResponse(already, remote, "");
    }

    /** Why this engine cannot take {@code r}'s chunks, or empty when it can. */
    private Optional<String> check(AllocRequest r) {
        if (r.keys().isEmpty()) {
            return Optional.of("an allocation request without keys");
        }
        if (r.fmt() != MemoryFormat.KV_2LTD.code()) {
            return Optional.of("memory format " + r.fmt() + " where this decoder takes KV_2LTD (" + MemoryFormat.KV_2LTD.code()
                    + ")");
        }
        if (!r.dtype().equals(metadata.kvDtype().keyName())) {
            return Optional.of("dtype " + r.dtype() + " where this decoder's model keeps KV in " + metadata.kvDtype().keyName());
        }
        List<Integer> expected = List.of(2, metadata.numLayers(), chunkSize, metadata.numKvHeads() * metadata.headSize());
        if (!r.shape().equals(expected)) {
            return Optional.of("chunk shape " + r.shape() + " where this decoder's model has " + expected);
        }
        if (r.lastChunkToks() < 1 || r.lastChunkToks() > chunkSize) {
            return Optional.of("last_chunk_toks " + r.lastChunkToks() + " outside 1.." + chunkSize);
        }
        for (String k : r.keys()) {
            CacheEngineKey key;
            try {
                key = CacheEngineKey.parse(k);
            } catch (IllegalArgumentException e) {
                return Optional.of("a key that does not parse: " + e.getMessage());
            }
            if (!key.modelName().equals(metadata.modelName()) || key.worldSize() != metadata.worldSize()
                    || key.workerId() != metadata.workerId() || key.dtype() != metadata.kvDtype()) {
                return Optional.of("key " + k + " is not of this decoder's model and worker (" + metadata.modelName() + "@"
                        + metadata.worldSize() + "@" + metadata.workerId() + ", " + metadata.kvDtype().keyName() + ")");
            }
        }
        return Optional.empty();
    }

    /** {@link PdRooms.Landing}. */
    final class Landing implements PdRooms.Landing {
        private final Slot slot;
        private boolean done;

        private Landing(Slot slot) {
            this.slot = slot;
        }

        @Override
        public MemorySegment segment() {
            return slot.obj.segment();
        }

        @Override
        public void landed() {
            finish(true, false);
        }

        @Override
        public void discard(boolean tagFailure) {
            finish(false, tagFailure);
        }

        private void finish(boolean ok, boolean tagFailure) {
            lock.lock();
            try {
                if (done) {
                    return;
                }
                done = true;
                if (ok && !closed) {
                    slot.state = State.LANDED;
                    slot.deadline = clock.getAsLong() + unclaimedTtlNanos;
                    landed.incrementAndGet();
                    landedBytes.addAndGet(slot.obj.byteSize());
                } else {
                    if (tagFailure) {
                        tagFailures.incrementAndGet();
                    }
                    drop(slot);
                }
            } finally {
                lock.unlock();
            }
        }
    }

    /** {@link PdRooms#beginWrite}. */
    Optional<Landing> beginWrite(long slotId, long payloadBytes) {
        lock.lock();
        try {
            Slot s = closed ? null : bySlot.get(slotId);
            if (s == null || s.state != State.PENDING || s.obj.byteSize() != payloadBytes) {
                lateWrites.incrementAndGet();
                return Optional.empty();
            }
            s.state = State.WRITING;
            return Optional.of(new Landing(s));
        } finally {
            lock.unlock();
        }
    }

    // ---- the decoder's side: the tier --------------------------------------------------------------

    @Override
    public boolean contains(CacheKey key, boolean pin) {
        lock.lock();
        try {
            Slot s = byKey.get(key);
            if (s == null || s.state != State.LANDED) {
                return false;
            }
            if (pin) {
                s.pins++;
            }
            return true;
        } finally {
            lock.unlock();
        }
    }

    /** The decoder's own stores do not enter the PD buffer: it holds what senders push. */
    @Override
    public void batchedSubmitPut(List<? extends CacheKey> keys, List<MemoryObj> objs) {
    }

    /**
     * The chunk, consuming one claim: a copy in the CPU tier's memory when there is room for one (the
     * PD room is then freed once no claim is left), else the chunk itself.
     */
    @Override
    public Optional<MemoryObj> getBlocking(CacheKey key) {
        MemoryObj source;
        boolean last;
        lock.lock();
        try {
            Slot s = byKey.get(key);
            if (s == null || s.state != State.LANDED) {
                return Optional.empty();
            }
            source = s.obj.retain();
            s.claims--;
            last = s.claims <= 0;
            if (last) {
                remove(s);
            }
            served.incrementAndGet();
        } finally {
            lock.unlock();
        }
        if (last) {
            source.release(); // the tier's own reference; the caller's (taken above) keeps it alive
        }
        Optional<MemoryObj> copy;
        try {
            copy = copyTarget.allocate(source.shape(), source.dtype(), source.format(), AllocationMode.NO_EVICTION)
                    .or(() -> copyTarget.allocate(source.shape(), source.dtype(), source.format(), AllocationMode.EVICT));
        } catch (RuntimeException e) {
            copy = Optional.empty();
        }
        if (copy.isEmpty()) {
            return Optional.of(source);
        }
        MemorySegment.copy(source.segment(), 0, copy.get().segment(), 0, source.byteSize());
        source.release();
        return copy;
    }

    @Override
    public boolean unpin(CacheKey key) {
        lock.lock();
        try {
            Slot s = byKey.get(key);
            if (s == null || s.pins == 0) {
                return false;
            }
            s.pins--;
            return true;
        } finally {
            lock.unlock();
        }
    }

    @Override
    public boolean remove(CacheKey key) {
        lock.lock();
        try {
            Slot s = byKey.get(key);
            if (s == null || s.state == State.WRITING) {
                return false;
            }
            drop(s);
            return true;
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void touchCache() {
    }

    @Override
    public long clear() {
        long tokens = 0;
        lock.lock();
        try {
            for (Slot s : List.copyOf(byKey.values())) {
                if (s.state == State.LANDED && s.pins == 0) {
                    tokens += s.obj.tokenCount();
                    drop(s);
                }
            }
        } finally {
            lock.unlock();
        }
        return tokens;
    }

    // ---- expiry -----------------------------------------------------------------------------------

    /** Frees room whose write did not come in time, and landed chunks no retrieve read in time (unpinned). */
    private void sweep(long now) {
        for (Iterator<Slot> it = bySlot.values().iterator(); it.hasNext(); ) {
            Slot s = it.next();
            if (now - s.deadline < 0 || s.state == State.WRITING || (s.state == State.LANDED && s.pins > 0)) {
                continue;
            }
            it.remove();
            byKey.remove(s.key, s);
            (s.state == State.PENDING ? expiredPending : expiredUnclaimed).incrementAndGet();
            s.obj.release();
        }
    }

    /** Sweeps now (tests on a test clock call this instead of waiting for the sweep thread). */
    void sweepNow() {
        lock.lock();
        try {
            sweep(clock.getAsLong());
        } finally {
            lock.unlock();
        }
    }

    private void sweepLoop(Duration every) {
        lock.lock();
        try {
            while (!closed) {
                sweep(clock.getAsLong());
                closing.await(every.toNanos(), TimeUnit.NANOSECONDS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            lock.unlock();
        }
    }

    /** Removes {@code s} and releases the tier's reference, once: a slot dropped already is left alone. */
    private void drop(Slot s) {
        if (bySlot.remove(s.id, s)) {
            byKey.remove(s.key, s);
            s.obj.release();
        }
    }

    private void remove(Slot s) {
        bySlot.remove(s.id, s);
        byKey.remove(s.key, s);
    }

    private void ensureOpen() {
        if (closed) {
            throw new IllegalStateException("the PD tier is closed");
        }
    }

    // ---- reporting and lifetime -------------------------------------------------------------------

    /** The counters now. */
    public Stats stats() {
        int held;
        lock.lock();
        try {
            held = bySlot.size();
        } finally {
            lock.unlock();
        }
        var a = buffer.stats();
        return new Stats(allocated.get(), alreadySent.get(), refused.get(), refusedRequests.get(), landed.get(),
                landedBytes.get(), tagFailures.get(), lateWrites.get(), expiredPending.get(), expiredUnclaimed.get(),
                served.get(), held, a.usedBytes(), a.capacityBytes());
    }

    /** The model the tier takes chunks of. */
    public ModelMetadata metadata() {
        return metadata;
    }

    /** Tokens per full chunk. */
    public int chunkSize() {
        return chunkSize;
    }

    /** The bound of a sender's waits and of room waiting for its write. */
    public Duration timeout() {
        return Duration.ofNanos(timeoutNanos);
    }

    /** Releases every chunk (a write still in progress is discarded when it ends) and closes the buffer. */
    @Override
    public void close() {
        lock.lock();
        try {
            if (closed) {
                return;
            }
            closed = true;
            closing.signalAll();
            for (Slot s : List.copyOf(bySlot.values())) {
                if (s.state != State.WRITING) {
                    drop(s);
                }
            }
        } finally {
            lock.unlock();
        }
        threads.join(Duration.ofSeconds(5));
        lock.lock();
        try {
            for (Slot s : List.copyOf(bySlot.values())) {
                LOG.log(System.Logger.Level.WARNING, "PD tier closed while slot {0} ({1}) was being written", s.id, s.key);
                drop(s);
            }
        } finally {
            lock.unlock();
        }
        buffer.close();
    }

    @Override
    public String toString() {
        return "PdBackend[" + metadata.modelName() + ", " + buffer + "]";
    }
}
