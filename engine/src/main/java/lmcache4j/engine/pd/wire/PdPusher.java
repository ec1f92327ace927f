package lmcache4j.engine.pd.wire;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingDeque;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

import lmcache4j.allocator.MemoryAllocator;
import lmcache4j.allocator.MemoryFormat;
import lmcache4j.allocator.MemoryObj;
import lmcache4j.allocator.TensorShape;
import lmcache4j.allocator.internal.threads.OwnedThreads;
import lmcache4j.engine.ModelMetadata;
import lmcache4j.engine.connector.ExternalKvCache;
import lmcache4j.engine.key.ChunkRange;

/**
 * The sender's machinery (LMCache's {@code PDBackend} on the sender side): chunks gathered from the
 * KV cache into a bounded staging buffer as soon as they are computed, pushed by one thread to the
 * receiver (allocation request, then the writes), and the proxy told when a request's chunks are all
 * sent.
 *
 * <p><b>Pipelined.</b> The sending thread does not wait for a chunk's acknowledgement before the
 * next write or the next allocation request: each receiver's transfer connection has a thread that
 * reads its acknowledgements (they come in write order) and finishes the chunks. At most
 * {@link #WINDOW} + 2 chunks written to one receiver wait for theirs (the sending thread waits,
 * bounded, for room), so neither side holds more than that for a connection. When the connection
 * breaks (the receiver died, closed it after a failed tag, or sent no acknowledgement within the
 * timeout) every chunk waiting on it has failed, and its request stops. The room for a request's
 * next batch is asked for before the current batch is written, so the stream never waits for an
 * allocation answer while chunks are queued.
 *
 * <p>{@code lmcache4j.engine.pd.PdSender} is its public face; {@code bench pd}
 * makes an unkeyed one to measure what the tags cost.
 *
 * <p>Every wait is bounded by {@code timeout}: a connect, an allocation answer, a write, an
 * acknowledgement, a notice, and staging room. A request whose push fails (the receiver refused,
 * died, or its buffer is full) stops pushing: its later chunks are dropped, since the decoder's
 * retrieve stops at the first missing chunk and computes the rest.
 */
public final class PdPusher implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(PdPusher.class.getName());
    /** Most chunks of one request sent under one allocation request. */
    private static final int MAX_BATCH = 16;
    /**
     * Chunks written on one transfer connection that wait in its window for their acknowledgement;
     * besides them, at most one whose acknowledgement is being read and one being written.
     */
    public static final int WINDOW = 8;
    private static final int SMALL_FRAME_BYTES = 1 << 20;

    /** Where a receiver's worker listens: its transfer ({@code pd_peer_init_port}) and allocation ({@code pd_peer_alloc_port}) ports. */
    public record Peer(String host, int initPort, int allocPort) {
        public Peer {
            Objects.requireNonNull(host, "host");
            if (host.isBlank() || initPort < 1 || initPort > 65535 || allocPort < 1 || allocPort > 65535) {
                throw new IllegalArgumentException("a PD receiver is a host and two ports 1..65535, got " + host + ":"
                        + initPort + "/" + allocPort);
            }
        }
    }

    /** Counters, a snapshot. */
    public record Stats(long pushedChunks, long pushedBytes, long alreadySentChunks, long refusedChunks,
                        long failedChunks, long stagingTimeouts, long notices, long noticeFailures) {
    }

    private final MemoryAllocator staging;
    private final ModelMetadata metadata;
    private final int chunkSize;
    private final Optional<byte[]> token;
    private final Duration timeout;
    private final Optional<String> proxyHost;
    private final int proxyPort;
    private final LinkedBlockingDeque<Item> queue = new LinkedBlockingDeque<>();
    private final Map<Peer, Link> links = new HashMap<>(); // the sending thread's
    private final Set<Link> live = ConcurrentHashMap.newKeySet(); // links whose acknowledgement reader runs
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition progress = lock.newCondition();
    private int stagingWaiters; // under lock: callers waiting for staging room, woken by every finished chunk
    private final Object noticeLock = new Object();
    private final OwnedThreads threads = new OwnedThreads();
    private PdConnection proxyLink; // under noticeLock
    private volatile boolean closed;

    private final AtomicLong pushed = new AtomicLong();
    private final AtomicLong pushedBytes = new AtomicLong();
    private final AtomicLong alreadySent = new AtomicLong();
    private final AtomicLong refused = new AtomicLong();
    private final AtomicLong failed = new AtomicLong();
    private final AtomicLong stagingTimeouts = new AtomicLong();
    private final AtomicLong notices = new AtomicLong();
    private final AtomicLong noticeFailures = new AtomicLong();

    /**
     * @param staging   the staging buffer, owned from now on: chunks wait there until sent
     * @param token     the deployment's token; empty only for {@code bench pd}'s unkeyed measurement
     * @param proxyHost the proxy's host to notify, or empty
     */
    public PdPusher(MemoryAllocator staging, ModelMetadata metadata, int chunkSize, Optional<byte[]> token, Duration timeout,
                    Optional<String> proxyHost, int proxyPort) {
        this.staging = Objects.requireNonNull(staging, "staging");
        this.metadata = Objects.requireNonNull(metadata, "metadata");
        this.chunkSize = chunkSize;
        this.token = Objects.requireNonNull(token, "token");
        this.timeout = Objects.requireNonNull(timeout, "timeout");
        this.proxyHost = Objects.requireNonNull(proxyHost, "proxyHost");
        this.proxyPort = proxyPort;
        threads.start("pd-sender", this::sendLoop);
    }

    /** One chunk gathered and waiting to be sent; {@link #done} once, by the sending thread. */
    private static final class Item {
        final Transfer transfer;
        final ChunkRange chunk;
        final MemoryObj obj;
        boolean finished; // under lock

        Item(Transfer transfer, ChunkRange chunk, MemoryObj obj) {
            this.transfer = transfer;
            this.chunk = chunk;
            this.obj = obj;
        }
    }

    /** What one request's push did. */
    public record Result(int pushedChunks, int alreadySentChunks, int refusedChunks, int failedChunks, long pushedBytes,
                         Optional<String> stopReason, boolean notified, long stagingWaitNanos, long drainNanos) {
    }

    /**
     * Starts pushing request {@code reqId}'s {@code chunks} (in token order, the last one possibly
     * partial) to {@code receiver}.
     */
    public Transfer begin(String reqId, List<ChunkRange> chunks, Peer receiver) {
        Objects.requireNonNull(reqId, "reqId");
        Objects.requireNonNull(receiver, "receiver");
        if (closed) {
            throw new IllegalStateException("the PD sender is closed");
        }
        for (int i = 0; i < chunks.size(); i++) {
            ChunkRange c = chunks.get(i);
            int tokens = c.end() - c.start();
            if (tokens < 1 || tokens > chunkSize || (tokens < chunkSize && i != chunks.size() - 1)) {
                throw new IllegalArgumentException("chunk " + i + " has " + tokens + " tokens: every chunk but the last"
                        + " must have " + chunkSize);
            }
        }
        return new Transfer(reqId, List.copyOf(chunks), receiver);
    }

    /** One request's push, fed as its prefill computes positions. */
    public final class Transfer {
        private final String reqId;
        private final List<ChunkRange> chunks;
        private final Peer receiver;
        private int next; // the caller's
        private int inFlight; // under lock
        private int pushedChunks;
        private int alreadySentChunks;
        private int refusedChunks;
        private int failedChunks;
        private long bytes;
        private long stagingWaitNanos;
        private volatile String stopReason;

        private Transfer(String reqId, List<ChunkRange> chunks, Peer receiver) {
            this.reqId = reqId;
            this.chunks = chunks;
            this.receiver = receiver;
        }

        /** The request's id. */
        public String reqId() {
            return reqId;
        }

        /**
         * Gathers every chunk that lies wholly within the first {@code computed} positions of
         * {@code kv} and has not been gathered yet, and queues it; returns at once (the sending runs on
         * the sender's thread). A chunk waits at most the timeout for staging room; without room the
         * rest of the request is not pushed.
         */
        public void pushComputed(ExternalKvCache kv, int computed) {
            TensorShape full = TensorShape.of(2, metadata.numLayers(), chunkSize, metadata.numKvHeads() * metadata.headSize());
            while (next < chunks.size() && chunks.get(next).end() <= computed && stopReason == null) {
                ChunkRange c = chunks.get(next);
                Optional<MemoryObj> obj = stagingRoom(full.withDim(2, c.end() - c.start()));
                if (obj.isEmpty() && closed) {
                    stop("the sender closed");
                    break;
                }
                if (obj.isEmpty()) {
                    stagingTimeouts.incrementAndGet();
                    stop("no staging room for " + timeout.toMillis() + " ms (pd_buffer_size of the sender)");
                    break;
                }
                try {
                    kv.gather(c.start(), c.end(), obj.get().segment());
                } catch (RuntimeException e) {
                    obj.get().release();
                    throw e;
                }
                lock.lock();
                try {
                    inFlight++;
                } finally {
                    lock.unlock();
                }
                queue.add(new Item(this, c, obj.get()));
                next++;
            }
        }

        private Optional<MemoryObj> stagingRoom(TensorShape shape) {
            Optional<MemoryObj> obj = staging.allocate(shape, metadata.kvDtype(), MemoryFormat.KV_2LTD);
            if (obj.isPresent()) {
                return obj;
            }
            long started = System.nanoTime();
            long deadline = started + timeout.toNanos();
            lock.lock();
            stagingWaiters++;
            try {
                while (obj.isEmpty() && System.nanoTime() - deadline < 0 && !closed) {
                    progress.await(10, TimeUnit.MILLISECONDS);
                    obj = staging.allocate(shape, metadata.kvDtype(), MemoryFormat.KV_2LTD);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } finally {
                stagingWaiters--;
                lock.unlock();
                stagingWaitNanos += System.nanoTime() - started;
            }
            return obj;
        }

        /**
         * Waits until every queued chunk is sent or given up (bounded), then tells the proxy (when the
         * sender has one) that the request is ready, as LMCache's sender does after its last chunk:
         * also after a failed push, so the decoder starts at once and computes what is missing.
         */
        public Result finish() {
            long started = System.nanoTime();
            lock.lock();
            try {
                long bound = timeout.toNanos() * (inFlight + 2L);
                long deadline = started + bound;
                for (long left = bound; inFlight > 0 && left > 0; left = deadline - System.nanoTime()) {
                    progress.awaitNanos(left);
                }
                if (inFlight > 0) {
                    stop("the receiver took longer than " + bound / 1_000_000 + " ms for this request's chunks");
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                stop("interrupted");
            } finally {
                lock.unlock();
            }
            long drain = System.nanoTime() - started;
            boolean notified = proxyHost.isPresent() && notifyProxy(reqId);
            lock.lock();
            try {
                int notGathered = chunks.size() - next; // never pushed either: counted once, here and in the totals
                failedChunks += notGathered;
                failed.addAndGet(notGathered);
                next = chunks.size();
                return new Result(pushedChunks, alreadySentChunks, refusedChunks, failedChunks, bytes,
                        Optional.ofNullable(stopReason), notified, stagingWaitNanos, drain);
            } finally {
                lock.unlock();
            }
        }

        void stop(String why) {
            if (stopReason == null) {
                stopReason = why;
                LOG.log(System.Logger.Level.DEBUG, "PD push of {0} to {1} stopped: {2}", reqId, receiver, why);
            }
        }

        /** Why the push stopped early, if it did. */
        public Optional<String> stopReason() {
            return Optional.ofNullable(stopReason);
        }
    }

    // ---- the sending thread -----------------------------------------------------------------------

    private void sendLoop() {
        List<Item> taken = new ArrayList<>(2 * MAX_BATCH); // every item taken from the queue and not yet finished
        while (!closed) {
            try {
                Item first = queue.poll(100, TimeUnit.MILLISECONDS);
                if (first == null) {
                    continue;
                }
                List<Item> batch = new ArrayList<>(MAX_BATCH);
                batch.add(first);
                taken.add(first);
                moreOf(first.transfer, batch, taken);
                send(first.transfer, batch, taken);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "PD sender: " + e, e);
                for (Item i : taken) {
                    i.transfer.stop("the sender failed: " + e);
                    done(i, Outcome.FAILED, 0);
                }
            } finally {
                taken.clear();
            }
        }
        for (Item i; (i = queue.poll()) != null; ) {
            i.transfer.stop("the sender closed");
            done(i, Outcome.FAILED, 0);
        }
    }

    /** Moves the queue's next items of {@code t}, up to a batch, into {@code batch} (and {@code taken}), without waiting. */
    private void moreOf(Transfer t, List<Item> batch, List<Item> taken) {
        while (batch.size() < MAX_BATCH && queue.peek() != null && queue.peek().transfer == t) {
            Item i = queue.poll();
            batch.add(i);
            taken.add(i);
        }
    }

    private enum Outcome { PUSHED, ALREADY_SENT, REFUSED, FAILED }

    /** Room the receiver gave for a batch, on the link that asked. */
    private record Allocation(Link link, AllocResponse answer) {
    }

    /**
     * Pushes {@code batch} and then, batch by batch, the chunks of {@code t} queued meanwhile. The
     * allocation request of the next batch goes out before the current batch's writes, so the
     * receiver answers it while the chunks stream: the sender never stops writing to wait for room
     * (a round trip every {@link #MAX_BATCH} chunks had left the stream idle for about a fifth of its time).
     */
    private void send(Transfer t, List<Item> batch, List<Item> taken) {
        if (t.stopReason != null) {
            batch.forEach(i -> done(i, Outcome.FAILED, 0));
            return;
        }
        // A kept connection the receiver has closed (idle, or restarted) fails at once: then once more on a fresh one.
        Optional<Allocation> a = allocate(t, batch, links.containsKey(t.receiver));
        while (a.isPresent()) {
            List<Item> next = new ArrayList<>(MAX_BATCH);
            AllocResponse answer = a.get().answer();
            if (t.stopReason == null && answer.error().isEmpty() && !answer.remoteIndexes().contains(AllocResponse.REFUSED)) {
                moreOf(t, next, taken); // not ahead of a refusal: that stops the request, and the room would wait unused
            }
            boolean asked = !next.isEmpty() && request(t, next, a.get().link());
            write(t, batch, a.get().link(), answer);
            if (next.isEmpty()) {
                return;
            }
            // The answer is read even when the writes stopped the request: the allocation connection stays in step.
            a = asked ? answer(t, next, a.get().link()) : t.stopReason == null ? allocate(t, next, false) : Optional.empty();
            if (t.stopReason != null) {
                next.forEach(i -> done(i, Outcome.FAILED, 0));
                return;
            }
            batch = next;
        }
    }

    /**
     * Asks for room for {@code batch} and waits for the answer; empty (every item finished) when that
     * failed. With {@code mayRetry}, a failure before anything was written is retried once on a fresh
     * connection (the kept one may have been closed by the receiver).
     */
    private Optional<Allocation> allocate(Transfer t, List<Item> batch, boolean mayRetry) {
        Link link;
        try {
            link = link(t.receiver);
        } catch (IOException e) {
            t.stop("cannot reach the receiver " + t.receiver + ": " + e.getMessage());
            batch.forEach(i -> done(i, Outcome.FAILED, 0));
            return Optional.empty();
        }
        try {
            link.alloc.sendMessage(allocRequest(batch));
            return Optional.of(new Allocation(link, PdMessages.decodeAllocResponse(message(link.alloc.receive()))));
        } catch (PdProtocolException e) {
            return failAllocation(t, batch, "the receiver " + t.receiver + " answered out of protocol: " + e.getMessage());
        } catch (IOException e) {
            if (mayRetry) {
                closeLink(t.receiver);
                return allocate(t, batch, false);
            }
            return failAllocation(t, batch, "push to " + t.receiver + " failed: " + e.getMessage());
        }
    }

    /** Sends the allocation request of {@code batch} on {@code link} without waiting; false (nothing sent) when that failed. */
    private boolean request(Transfer t, List<Item> batch, Link link) {
        try {
            link.alloc.sendMessage(allocRequest(batch));
            return true;
        } catch (IOException e) {
            closeLink(t.receiver);
            return false;
        }
    }

    /** Reads the answer to the request {@link #request} sent for {@code batch}. */
    private Optional<Allocation> answer(Transfer t, List<Item> batch, Link link) {
        try {
            return Optional.of(new Allocation(link, PdMessages.decodeAllocResponse(message(link.alloc.receive()))));
        } catch (PdProtocolException e) {
            return failAllocation(t, batch, "the receiver " + t.receiver + " answered out of protocol: " + e.getMessage());
        } catch (IOException e) {
            return failAllocation(t, batch, "push to " + t.receiver + " failed: " + e.getMessage());
        }
    }

    private Optional<Allocation> failAllocation(Transfer t, List<Item> batch, String why) {
        closeLink(t.receiver);
        t.stop(why);
        batch.forEach(i -> done(i, Outcome.FAILED, 0));
        return Optional.empty();
    }

    private byte[] allocRequest(List<Item> batch) {
        List<String> keys = new ArrayList<>(batch.size());
        for (Item i : batch) {
            keys.add(i.chunk.key().toKeyString());
        }
        MemoryObj last = batch.getLast().obj;
        return PdMessages.encode(new AllocRequest(keys, MemoryFormat.KV_2LTD.code(),
                List.of(2, metadata.numLayers(), chunkSize, metadata.numKvHeads() * metadata.headSize()),
                metadata.kvDtype().keyName(), last.tokenCount()));
    }

    private void write(Transfer t, List<Item> batch, Link link, AllocResponse answer) {
        try {
            if (!answer.error().isEmpty()) {
                t.stop("the receiver refused the request: " + answer.error());
                batch.forEach(i -> done(i, Outcome.REFUSED, 0));
                return;
            }
            boolean[] alreadySent = alreadySent(answer, batch.size());
            int r = 0;
            for (int i = 0; i < batch.size(); i++) {
                Item item = batch.get(i);
                if (alreadySent[i]) {
                    done(item, Outcome.ALREADY_SENT, 0);
                    continue;
                }
                long slot = answer.remoteIndexes().get(r++);
                if (slot == AllocResponse.REFUSED || t.stopReason != null) {
                    t.stop("the receiver's PD buffer is full");
                    done(item, Outcome.REFUSED, 0);
                    continue;
                }
                link.data.sendChunk(slot, item.obj.segment());
                link.awaitAck(item, timeout); // queued only once written: the staging stays ours until then
            }
        } catch (IOException e) {
            closeLink(t.receiver);
            t.stop((e instanceof PdProtocolException ? "the receiver " + t.receiver + " answered out of protocol: "
                    : "push to " + t.receiver + " failed: ") + e.getMessage());
            batch.forEach(i -> done(i, Outcome.FAILED, 0));
            link.failUnacknowledged();
        }
    }

    /**
     * Which of a batch of {@code size} chunks {@code answer} says the receiver holds already. Checked
     * whole before any write: an index out of range, named twice, or a count that leaves a chunk
     * without its slot is a receiver out of protocol, and nothing of the batch goes into its rooms.
     */
    private static boolean[] alreadySent(AllocResponse answer, int size) throws PdProtocolException {
        if (answer.alreadySentIndexes().size() + answer.remoteIndexes().size() != size) {
            throw new PdProtocolException("an allocation answer for " + (answer.alreadySentIndexes().size()
                    + answer.remoteIndexes().size()) + " chunks where " + size + " were asked for");
        }
        boolean[] sent = new boolean[size];
        for (int i : answer.alreadySentIndexes()) {
            if (i < 0 || i >= size) {
                throw new PdProtocolException("an allocation answer names chunk " + i + " as already sent, in a batch of "
                        + size);
            }
            if (sent[i]) {
                throw new PdProtocolException("an allocation answer names chunk " + i + " as already sent twice");
            }
            sent[i] = true;
        }
        return sent;
    }

    /** The acknowledgement reader of {@code link}: finishes its chunks in write order until the connection ends. */
    private void collectAcks(Link link) {
        String why = "the sender closed";
        Item item = null; // taken from the window, its acknowledgement not read yet
        try {
            while (!closed) {
                item = link.unacked.poll(100, TimeUnit.MILLISECONDS);
                if (item == null) {
                    if (link.data.isClosed()) {
                        why = "the connection to " + link.peer + " closed";
                        break;
                    }
                    continue;
                }
                PdConnection.Frame ack = link.data.receive();
                if (!(ack instanceof PdConnection.Ack a)) {
                    throw new PdProtocolException("expected an acknowledgement, got " + ack);
                }
                if (a.status() == PdConnection.OK) {
                    done(item, Outcome.PUSHED, item.obj.byteSize());
                } else {
                    item.transfer.stop("the receiver refused a write (its room had expired)");
                    done(item, Outcome.FAILED, 0);
                }
                item = null;
            }
        } catch (IOException e) {
            why = "push to " + link.peer + " failed: " + e.getMessage();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            link.acksEnded = why;
            link.alloc.close();
            link.data.close();
            if (item != null) {
                item.transfer.stop(why);
                done(item, Outcome.FAILED, 0);
            }
            link.failUnacknowledged();
            live.remove(link);
        }
    }

    private static byte[] message(PdConnection.Frame f) throws PdProtocolException {
        if (f instanceof PdConnection.Message m) {
            return m.body();
        }
        throw new PdProtocolException("expected a message, got " + f);
    }

    /** Finishes {@code i} once (the sending thread and an acknowledgement reader may both try). */
    private void done(Item i, Outcome outcome, long bytes) {
        Transfer t = i.transfer;
        lock.lock();
        try {
            if (i.finished) {
                return;
            }
            i.finished = true;
            i.obj.release();
            switch (outcome) {
                case PUSHED -> {
                    t.pushedChunks++;
                    t.bytes += bytes;
                    pushed.incrementAndGet();
                    pushedBytes.addAndGet(bytes);
                }
                case ALREADY_SENT -> {
                    t.alreadySentChunks++;
                    alreadySent.incrementAndGet();
                }
                case REFUSED -> {
                    t.refusedChunks++;
                    refused.incrementAndGet();
                }
                case FAILED -> {
                    t.failedChunks++;
                    failed.incrementAndGet();
                }
            }
            t.inFlight--;
            if (t.inFlight == 0 || stagingWaiters > 0 || closed) { // a wake for every chunk cost a thread switch each
                progress.signalAll();
            }
        } finally {
            lock.unlock();
        }
    }

    /**
     * The allocation and transfer connections to one receiver worker, and the chunks written on it
     * that await their acknowledgement.
     */
    private final class Link {
        final Peer peer;
        final PdConnection alloc;
        final PdConnection data;
        final ArrayBlockingQueue<Item> unacked = new ArrayBlockingQueue<>(WINDOW);
        /** Why the acknowledgement reader stopped, once it has. */
        volatile String acksEnded;

        Link(Peer peer, PdConnection alloc, PdConnection data) {
            this.peer = peer;
            this.alloc = alloc;
            this.data = data;
        }

        boolean usable() {
            return acksEnded == null && !alloc.isClosed() && !data.isClosed();
        }

        /** Hands a written chunk to the reader, waiting at most {@code bound} for room in the window. */
        void awaitAck(Item item, Duration bound) throws IOException {
            try {
                if (!unacked.offer(item, bound.toNanos(), TimeUnit.NANOSECONDS)) {
                    throw new java.net.SocketTimeoutException("no acknowledgement from " + peer + " within "
                            + bound.toMillis() + " ms for " + WINDOW + " chunks");
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new java.io.InterruptedIOException("interrupted waiting for acknowledgements");
            }
            String ended = acksEnded;
            if (ended != null) { // the reader is gone: nobody will take the chunk
                failUnacknowledged();
                throw new IOException(ended);
            }
        }

        /** Fails every chunk still waiting for its acknowledgement (the connection ended), and stops its request. */
        void failUnacknowledged() {
            String why = acksEnded == null ? "the connection to " + peer + " broke" : acksEnded;
            for (Item i; (i = unacked.poll()) != null; ) {
                i.transfer.stop(why);
                done(i, Outcome.FAILED, 0);
            }
        }
    }

    private Link link(Peer peer) throws IOException {
        Link l = links.get(peer);
        if (l != null && l.usable()) {
            return l;
        }
        closeLink(peer);
        PdConnection alloc = connect(peer.host(), peer.allocPort(), SMALL_FRAME_BYTES);
        try {
            l = new Link(peer, alloc, connect(peer.host(), peer.initPort(), SMALL_FRAME_BYTES));
        } catch (IOException e) {
            alloc.close();
            throw e;
        }
        Link started = l;
        live.add(started);
        threads.start("pd-sender-acks", () -> collectAcks(started));
        links.put(peer, l);
        return l;
    }

    private PdConnection connect(String host, int port, int maxBody) throws IOException {
        return token.isPresent() ? PdConnection.connect(host, port, token.get(), timeout, maxBody)
                : PdConnection.connectUnkeyedForBenchmark(host, port, timeout, maxBody);
    }

    private void closeLink(Peer peer) {
        Link l = links.remove(peer);
        if (l != null) {
            l.alloc.close();
            l.data.close();
        }
    }

    // ---- notices ----------------------------------------------------------------------------------

    /** Tells the proxy request {@code reqId} is ready; one retry on a fresh connection. */
    private boolean notifyProxy(String reqId) {
        byte[] notice = PdMessages.encode(new ProxyNotif(reqId));
        synchronized (noticeLock) {
            for (int attempt = 0; attempt < 2; attempt++) {
                try {
                    if (proxyLink == null || proxyLink.isClosed()) {
                        proxyLink = connect(proxyHost.orElseThrow(), proxyPort, SMALL_FRAME_BYTES);
                    }
                    proxyLink.sendMessage(notice);
                    if (proxyLink.receive() instanceof PdConnection.Ack a && a.status() == PdConnection.OK) {
                        notices.incrementAndGet();
                        return true;
                    }
                    throw new PdProtocolException("the proxy did not acknowledge the notice");
                } catch (IOException e) {
                    if (proxyLink != null) {
                        proxyLink.close();
                        proxyLink = null;
                    }
                    if (attempt == 1) {
                        noticeFailures.incrementAndGet();
                        LOG.log(System.Logger.Level.WARNING, "PD sender: cannot tell the proxy at " + proxyHost.get() + ":"
                                + proxyPort + " that " + reqId + " is ready: " + e.getMessage());
                    }
                }
            }
            return false;
        }
    }

    // ---- reporting and lifetime -------------------------------------------------------------------

    /** The counters now. */
    public Stats stats() {
        return new Stats(pushed.get(), pushedBytes.get(), alreadySent.get(), refused.get(), failed.get(),
                stagingTimeouts.get(), notices.get(), noticeFailures.get());
    }

    /** The staging buffer (its usage, for reports). */
    public MemoryAllocator staging() {
        return staging;
    }

    /** Stops the sending thread (queued chunks are dropped), closes the connections and the staging buffer. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        lock.lock();
        try {
            progress.signalAll();
        } finally {
            lock.unlock();
        }
        for (Link l : live) { // a reader blocked on an acknowledgement ends now, failing what it waited for
            l.alloc.close();
            l.data.close();
        }
        threads.join(timeout.plusSeconds(5));
        for (Peer p : List.copyOf(links.keySet())) {
            closeLink(p);
        }
        synchronized (noticeLock) {
            if (proxyLink != null) {
                proxyLink.close();
            }
        }
        staging.close();
    }
}
