package lmcache4j.server.mp;

import java.util.ArrayList;
import java.util.BitSet;
import java.util.Iterator;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ConcurrentLinkedQueue;

import lmcache4j.server.mp.store.MpObjectStore;
import lmcache4j.server.mp.store.ObjectLayout;
import lmcache4j.server.mp.tier.MpLowerTiers;
import lmcache4j.server.mp.wire.IpcCacheServerKey;
import lmcache4j.server.mp.wire.MpHashChain;
import lmcache4j.server.mp.wire.MpKeyCodec;
import lmcache4j.server.mp.wire.MpKeyExpansion;
import lmcache4j.server.mp.wire.MpObjectKey;
import lmcache4j.server.mp.wire.MpProtocolException;
import lmcache4j.server.mp.wire.MpRequest;
import lmcache4j.server.mp.wire.MpScalars;

/**
 * Sessions and lookups of LMCache's MP protocol: each request id's hash chain; {@code lookup}, which
 * read-locks the leading chunks every rank stored (and starts a load from the lower tiers for the
 * rest); the prefetch status a scheduler polls or waits for; {@code free_lookup_locks} and
 * {@code end_session}. Loop thread only, except {@link #wakeLoopWith}'s callback, which a load's
 * thread runs.
 */
final class MpLookups {
    /**
     * Parked waits at most: LMCache's scheduler parks one per request, and at most
     * {@link MpLowerTiers#MAX_JOBS} requests load at once; more are answered at once. Also under
     * ZeroMQ's default send high-water mark (1,000), so the replies released together all go out.
     */
    static final int MAX_WAITERS = 256;

    /** What a request id holds: its hash chain, its last lookup, and that lookup's count until read. */
    static final class Session {
        final MpHashChain chain;
        /** The last lookup's chunk-major, rank-minor object keys, and how many leading chunks it locked. */
        List<MpObjectKey> lookupKeys = List.of();
        int lookupRanks = 1;
        int lookupFirstChunk;
        int lookupHits;
        /** The locked chunks {@code free_lookup_locks} released, from the lookup's first: each is released once. */
        BitSet lookupFreed = new BitSet();
        /** The count {@code query_prefetch_status} has yet to return (once), or -1. */
        int unreadHits = -1;
        /** Whether the last lookup's load from the lower tiers is still running (its count unknown). */
        boolean loading;
        /** Which lookup the running load belongs to: a later lookup of the same request makes it stale. */
        int generation;

        Session(int chunkSize) {
            chain = new MpHashChain(chunkSize);
        }
    }

    /** A {@code wait_prefetch_status} waiting for its session's load to end, or for its timeout. */
    private record Waiter(String requestId, byte[] identity, byte[] uid, byte[] op, long deadline) {
    }

    private final MpServerSettings settings;
    private final MpObjectStore store;
    private final MpInstances instances;
    private final Optional<MpLowerTiers> l2;
    private final MpSessions<Session> sessions;
    /** Sessions whose lookup count has not been read yet, or is still loading (LMCache's active prefetch jobs). */
    private int unreadJobs;
    /** Ends of loads from L2, posted by their threads, run on the loop thread ({@link #runCompletions}). */
    private final ConcurrentLinkedQueue<Runnable> completions = new ConcurrentLinkedQueue<>();
    /** Wakes the loop thread, so a load's end is answered at once (set by the server). */
    private volatile Runnable wakeLoop = () -> { };
    private final List<Waiter> waiters = new ArrayList<>();
    private final List<MpService.Deferred> deferred = new ArrayList<>();

    MpLookups(MpServerSettings settings, MpObjectStore store, MpInstances instances, Optional<MpLowerTiers> l2) {
        this.settings = settings;
        this.store = store;
        this.instances = instances;
        this.l2 = l2;
        // A session weighs its tokens (its hash chain adds 32 bytes per chunk): four longest prompts in all.
        this.sessions = new MpSessions<>(settings.maxSessions(), 4L * settings.maxTokens(), settings.sessionTtl().toNanos(),
                this::forgetJob);
    }

    /** The request id a prefetch or session operation names (its first argument). */
    static String requestId(MpRequest r) throws MpProtocolException {
        return MpScalars.decodeString(r.arg(0), "request_id", MpKeyCodec.MAX_STRING_BYTES);
    }

    /** The key's object keys, hashed with its session's chain (the session is made when new). */
    List<MpObjectKey> objectKeys(IpcCacheServerKey key, long now) throws MpProtocolException {
        Session s = sessions.getOrCreate(key.requestId(), now, id -> new Session(settings.chunkSize()));
        List<MpObjectKey> keys = MpKeyExpansion.objectKeys(key, s.chain);
        sessions.weigh(key.requestId(), key.tokenIds().length);
        return keys;
    }

    /**
     * Counts the leading chunks every rank stored and read-locks their objects for the retrieves to
     * come. When the pool's run stops short and lower tiers are configured, a load from them starts
     * off the loop thread; until it ends the request's prefetch status is None (LMCache's clients poll).
     */
    void lookup(IpcCacheServerKey key, int tpSize, long now) throws MpProtocolException {
        List<MpObjectKey> keys = objectKeys(key, now);
        Session s = sessions.get(key.requestId(), now).orElseThrow();
        int ranks = key.workerId().isPresent() ? 1 : key.worldSize();
        Optional<ObjectLayout> layout = instances.layout(key.modelName(), key.worldSize());
        int hits = layout.isEmpty() ? 0 // no worker registered this model
                : store.prefixLockAllRanks(keys, ranks, key.numKvReaders());
        s.lookupKeys = keys;
        s.lookupRanks = ranks;
        s.lookupFirstChunk = key.start() / settings.chunkSize();
        s.lookupHits = hits;
        s.lookupFreed = new BitSet();
        if (s.unreadHits < 0 && !s.loading) {
            unreadJobs++;
        }
        s.unreadHits = hits;
        s.loading = false;
        int generation = ++s.generation;
        if (l2.isPresent() && layout.isPresent() && hits * ranks < keys.size()) {
            List<MpObjectKey> missing = keys.subList(hits * ranks, keys.size());
            String requestId = key.requestId();
            int readers = Math.max(1, key.numKvReaders());
            s.loading = l2.get().prefetch(missing, ranks, readers, layout.get(), loaded -> {
                completions.add(() -> loaded(requestId, s, generation, missing, ranks, readers, loaded));
                wakeLoop.run();
            });
        }
    }

    /** A load from L2 ended (loop thread): its session learns the count, or a stale load's locks go. */
    private void loaded(String requestId, Session s, int generation, List<MpObjectKey> missing, int ranks, int readers,
                        int chunks) {
        long now = System.nanoTime();
        Optional<Session> current = sessions.get(requestId, now);
        if (current.isEmpty() || current.get() != s || s.generation != generation || !s.loading) {
            for (int i = 0; i < readers; i++) { // the load locked each object once per reader; nobody will retrieve them
                store.releaseRead(missing.subList(0, chunks * ranks));
            }
            if (current.isEmpty()) {
                answerWaiters(requestId, now); // the session ended: its waits learn 0 now, not at their timeout
            }
            return;
        }
        s.loading = false;
        s.lookupHits += chunks;
        s.unreadHits = s.lookupHits;
        answerWaiters(requestId, now);
    }

    /** Answers the parked waits of {@code requestId} with what {@code query_prefetch_status} would say now. */
    private void answerWaiters(String requestId, long now) {
        Iterator<Waiter> it = waiters.iterator();
        while (it.hasNext()) {
            Waiter w = it.next();
            if (w.requestId().equals(requestId)) {
                it.remove();
                deferred.add(new MpService.Deferred(w.identity(), new MpService.Reply(w.uid(), w.op(),
                        readPrefetch(requestId, now, true).map(MpScalars::encodeInt).orElse(null))));
            }
        }
    }

    /**
     * Parks a {@code wait_prefetch_status} whose session is still loading, until the load ends or
     * the request's timeout passes (then None, as LMCache answers); false when it can be answered now.
     */
    boolean waitFor(MpRequest r, long now) throws MpProtocolException {
        String requestId = requestId(r);
        double timeout = MpScalars.decodeNumber(r.arg(1), "timeout");
        Optional<Session> s = sessions.get(requestId, now);
        if (s.isEmpty() || !s.get().loading || !(timeout > 0) || waiters.size() >= MAX_WAITERS) {
            return false; // answered now: the count, or None while the load runs (as at a timeout)
        }
        // Every load ends (each tier call is bounded by --l2-timeout); the lock lifetime only caps a silly timeout.
        long bound = Math.min((long) Math.min(timeout * 1e9, Long.MAX_VALUE / 4), settings.lockTtl().toNanos());
        waiters.add(new Waiter(requestId, r.identity(), r.uidFrame(), r.opFrame(), now + bound));
        return true;
    }

    /** {@code wake} is run, on a load's thread, when the load ended and its end waits for the loop. */
    void wakeLoopWith(Runnable wake) {
        wakeLoop = wake;
    }

    /** Runs the loads' ends and answers the waits due (loop thread); returns the replies to send. */
    List<MpService.Deferred> runCompletions(long now) {
        Runnable done;
        while ((done = completions.poll()) != null) {
            done.run();
        }
        Iterator<Waiter> it = waiters.iterator();
        while (it.hasNext()) {
            Waiter w = it.next();
            if (now - w.deadline() >= 0) {
                it.remove();
                deferred.add(new MpService.Deferred(w.identity(), new MpService.Reply(w.uid(), w.op(), null))); // timed out: None
            }
        }
        if (deferred.isEmpty()) {
            return List.of();
        }
        List<MpService.Deferred> out = List.copyOf(deferred);
        deferred.clear();
        return out;
    }

    /**
     * The hit count of the request's lookup (0 for an unknown request), or empty (None) while its
     * load from L2 runs; {@code consume}: only once.
     */
    Optional<Long> readPrefetch(String requestId, long now, boolean consume) {
        Optional<Session> s = sessions.get(requestId, now);
        if (s.isEmpty()) {
            return Optional.of(0L);
        }
        if (s.get().loading) {
            return Optional.empty();
        }
        if (s.get().unreadHits < 0) {
            return Optional.of(0L);
        }
        int hits = s.get().unreadHits;
        if (consume) {
            forgetJob(s.get());
        }
        return Optional.of((long) hits);
    }

    /** Releases the lookup's locks on {@code [start, end)} when no retrieve follows: every rank's, for every chunk. */
    void freeLookupLocks(IpcCacheServerKey key, long now) {
        Optional<Session> found = sessions.get(key.requestId(), now);
        if (found.isEmpty()) {
            return;
        }
        Session s = found.get();
        int from = Math.max(key.start() / settings.chunkSize(), s.lookupFirstChunk);
        int to = Math.min(key.end() / settings.chunkSize(), s.lookupFirstChunk + s.lookupHits);
        // A repeated or overlapping free must not release a chunk again: another reader's lock would go.
        List<MpObjectKey> release = new ArrayList<>();
        for (int chunk = from - s.lookupFirstChunk; chunk < to - s.lookupFirstChunk; chunk++) {
            if (!s.lookupFreed.get(chunk)) {
                s.lookupFreed.set(chunk);
                release.addAll(s.lookupKeys.subList(chunk * s.lookupRanks, (chunk + 1) * s.lookupRanks));
            }
        }
        store.releaseRead(release);
    }

    void endSession(String requestId) {
        sessions.remove(requestId).ifPresent(s -> {
            forgetJob(s);
            store.touch(s.lookupKeys);
        });
    }

    /** The session's lookup count will not be read (it was, or the session is gone); a load's end is then stale. */
    private void forgetJob(Session s) {
        if (s.unreadHits >= 0 || s.loading) {
            s.unreadHits = -1;
            s.loading = false;
            unreadJobs--;
        }
    }

    /** Drops idle sessions (housekeeping). */
    void sweep(long now) {
        sessions.sweep(now);
    }

    int sessionCount() {
        return sessions.size();
    }

    /** Lookups whose count has not been read yet, or is still loading (LMCache's active prefetch jobs). */
    int unreadJobs() {
        return unreadJobs;
    }
}
