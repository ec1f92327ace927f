package lmcache4j.engine.key;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.security.MessageDigest;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

import lmcache4j.allocator.internal.threads.OwnedThreads;

/**
 * A long prefix chain computed on two threads: a helper CBOR-encodes the chunks' token arrays
 * ahead while the calling thread hashes them in order. A chunk's tokens do not depend on its
 * parent hash, only the 35 bytes in front of them do, so the encoding of chunk {@code k + 1}
 * can run while chunk {@code k} is being hashed.
 *
 * <p>Why: with SHA-NI, SHA-256 runs at about 1.8 GB/s and encoding 256 token ids costs about half
 * as long as hashing their 1 KiB of CBOR, so a single thread reaches only about 0.68 of bare
 * SHA-256. With the encoding moved off the critical path the chain runs at the speed of its hashes.
 *
 * <p>Every chunk has its own slot in one buffer, sized for the worst case, so the two threads
 * never write the same bytes: the helper writes a slot's tokens (from {@link #TOKENS_AT}) and then
 * publishes its length with a release store; the caller writes the slot's head and parent in front
 * and hashes it. The caller never waits on a helper that has not started: it claims and encodes
 * the next chunk itself whenever the helper is not already encoding the one it needs, so the
 * result and its progress do not depend on the helper being scheduled at all. When the call
 * returns, every chunk the helper claimed has been published, so the buffer is free for reuse.
 *
 * <p>Helpers are daemon threads, one per core beyond the first (at most {@value #MAX_HELPERS}).
 * A chain that finds them all busy encodes on its own thread. A helper that finishes a chain
 * spins for {@value #HELPER_SPIN_MICROS} µs before it parks: waking a parked thread took the
 * caller about 20 µs on a 2-vCPU VM (an inter-processor interrupt through the hypervisor),
 * a twentieth of a 128k-token chain, while back-to-back chains (a prompt's lookup, retrieve and
 * store) find a spinning helper and hand it work with one compare-and-set.
 */
final class ChainPipeline {
    /**
     * Chains of fewer chunks are hashed on the calling thread: handing work to another thread costs
     * some microseconds, about 30 chunks of hashing. {@code -Dlmcache4j.hash.pipelineMinChunks=N}
     * changes the threshold; 0 turns the pipeline off.
     */
    static final int MIN_CHUNKS_DEFAULT = 32;
    static final int MIN_CHUNKS = Math.max(0, Integer.getInteger("lmcache4j.hash.pipelineMinChunks", MIN_CHUNKS_DEFAULT));
    /** With one CPU a helper would only take turns with the caller (and spin on its time): no pipeline. */
    private static final boolean MULTI_CORE = Runtime.getRuntime().availableProcessors() > 1;

    /** The slot's fixed head: array of 3, then a 32-byte byte string (the parent). */
    private static final byte ARRAY_OF_3 = (byte) (CborEncoder.MAJOR_ARRAY << 5 | 3);
    private static final byte BYTES_1 = (byte) (CborEncoder.MAJOR_BYTES << 5 | 24);
    /** LMCache's integer chain ends a slot with an empty tuple (its canonical extra keys), vLLM's with None. */
    private static final byte EMPTY_ARRAY = (byte) (CborEncoder.MAJOR_ARRAY << 5);
    static final int PARENT_BYTES = 32;
    private static final int PARENT_AT = 3;
    static final int TOKENS_AT = PARENT_AT + PARENT_BYTES;

    private static final VarHandle PUBLISHED = MethodHandles.arrayElementVarHandle(int[].class);

    static final int MAX_HELPERS = 4;
    static final long HELPER_SPIN_MICROS = 200;

    private ChainPipeline() {
    }

    /** Whether a chain of {@code chunks} chunks with this {@code noneHash} takes the pipeline. */
    static boolean worthIt(int chunks, ChunkHash noneHash) {
        return worthIt(chunks) && noneHash.length() == PARENT_BYTES;
    }

    /** Whether a chain of {@code chunks} chunks takes the pipeline (LMCache's integer chain: any parent fits). */
    static boolean worthIt(int chunks) {
        return MIN_CHUNKS > 0 && chunks >= MIN_CHUNKS && MULTI_CORE;
    }

    /** Bytes of the scratch buffer {@link #chain} needs for {@code chunks} chunks of {@code chunkSize}. */
    static long bufferBytes(int chunks, int chunkSize) {
        return (long) chunks * slotBytes(chunkSize);
    }

    private static int slotBytes(int chunkSize) {
        // head and parent, the token array with its last store's overhang, the final null
        return (int) (TOKENS_AT + CborEncoder.maxIntArrayBytes(chunkSize) + 1);
    }

    /**
     * Fills {@code out} with the chain over {@code tokens[0, end)} in chunks of {@code chunkSize}
     * (the last may be shorter), the first chained to {@code noneHash}, using {@code buf}
     * (at least {@link #bufferBytes} long) and {@code sha256}.
     */
    static void chain(ChunkHash noneHash, int[] tokens, int end, int chunkSize, ChunkHash[] out, byte[] buf,
                      MessageDigest sha256) {
        int n = out.length;
        Job job = new Job(tokens, end, chunkSize, n, buf, CborEncoder.NULL);
        Helpers.offer(job); // when every helper is busy this thread encodes everything itself
        ChunkHash parent = noneHash;
        for (int c = 0; c < n; c++) {
            int length = job.awaitOrEncode(c);
            int at = c * job.slot;
            buf[at] = ARRAY_OF_3;
            buf[at + 1] = BYTES_1;
            buf[at + 2] = PARENT_BYTES;
            parent.copyTo(buf, at + PARENT_AT);
            sha256.update(buf, at, length);
            parent = ChunkHash.wrap(sha256.digest());
            out[c] = parent;
        }
    }

    /**
     * As {@link #chain}, for LMCache's integer chain ({@link ChunkHasher#nextIntKey}): each slot's
     * parent is the previous key as a CBOR unsigned integer, written just in front of the tokens
     * (so the slot's hashed bytes start where that head starts), and the slot ends in an empty array.
     */
    static void intChain(long noneKey, int[] tokens, int end, int chunkSize, ChunkHash[] out, byte[] buf,
                         MessageDigest sha256) {
        int n = out.length;
        Job job = new Job(tokens, end, chunkSize, n, buf, EMPTY_ARRAY);
        Helpers.offer(job);
        long parent = noneKey;
        for (int c = 0; c < n; c++) {
            int length = job.awaitOrEncode(c);
            int at = c * job.slot;
            int start = at + TOKENS_AT - 1 - unsignedHeadBytes(parent);
            buf[start] = ARRAY_OF_3;
            CborEncoder.headAt(buf, start + 1, CborEncoder.MAJOR_UNSIGNED, parent);
            sha256.update(buf, start, length - (start - at));
            parent = ChunkHasher.firstEightBytes(sha256.digest());
            out[c] = ChunkHash.ofLong(parent);
        }
    }

    /** Bytes of the shortest CBOR head of the unsigned 64-bit {@code value}. */
    static int unsignedHeadBytes(long value) {
        if (value >= 0 && value < 24) {
            return 1;
        } else if (value >= 0 && value < 0x100) {
            return 2;
        } else if (value >= 0 && value < 0x1_0000) {
            return 3;
        } else if (value >= 0 && value < 0x1_0000_0000L) {
            return 5;
        }
        return 9;
    }

    /** The helper threads, started on first use. */
    private static final class Helpers {
        private static final Helper[] ALL = start();

        private static Helper[] start() {
            int count = Math.clamp(Runtime.getRuntime().availableProcessors() - 1, 1, MAX_HELPERS);
            Helper[] helpers = new Helper[count];
            for (int i = 0; i < count; i++) {
                helpers[i] = new Helper();
                Thread t = OwnedThreads.shared("hash-helper-" + i, helpers[i]); // shared by every engine, idle-parked
                helpers[i].thread = t;
                t.start();
            }
            return helpers;
        }

        /** Hands {@code job} to an idle helper; false when none is idle. */
        static boolean offer(Job job) {
            for (Helper h : ALL) {
                if (h.offer(job)) {
                    return true;
                }
            }
            return false;
        }
    }

    private static final class Helper implements Runnable {
        private final AtomicReference<Job> mailbox = new AtomicReference<>();
        /** Set before the helper re-checks its mailbox and parks; with the mailbox CAS a Dekker handshake. */
        private volatile boolean parked;
        private volatile Thread thread;

        boolean offer(Job job) {
            if (!mailbox.compareAndSet(null, job)) {
                return false;
            }
            if (parked) {
                LockSupport.unpark(thread);
            }
            return true;
        }

        @Override
        public void run() {
            long idleSince = System.nanoTime();
            while (true) {
                Job job = mailbox.get();
                if (job != null) {
                    job.helpEncode(); // never throws: a failed chunk is handed back to the caller
                    mailbox.set(null);
                    idleSince = System.nanoTime();
                } else if (System.nanoTime() - idleSince < HELPER_SPIN_MICROS * 1000) {
                    Thread.onSpinWait();
                } else {
                    parked = true;
                    if (mailbox.get() == null) {
                        LockSupport.park(this);
                    }
                    parked = false;
                    idleSince = System.nanoTime();
                }
            }
        }
    }

    /** One chain's shared state. */
    private static final class Job {
        final int[] tokens;
        final int end;
        final int chunkSize;
        final int chunks;
        final byte[] buf;
        final int slot;
        /** The next chunk nobody has claimed; claims are in order. */
        final AtomicInteger next = new AtomicInteger();
        /** Per chunk: 0 until encoded, then the slot's byte length (release-stored), or {@link #FAILED}. */
        final int[] published;
        /** The byte after each chunk's tokens: the extra keys (None, or an empty tuple). */
        final byte tail;
        /** The helper could not encode the chunk: the caller encodes it, and meets the failure itself. */
        static final int FAILED = -1;

        Job(int[] tokens, int end, int chunkSize, int chunks, byte[] buf, byte tail) {
            this.tail = tail;
            this.tokens = tokens;
            this.end = end;
            this.chunkSize = chunkSize;
            this.chunks = chunks;
            this.buf = buf;
            this.slot = slotBytes(chunkSize);
            this.published = new int[chunks];
        }

        /** The helper: claim and encode chunks until none is left. */
        void helpEncode() {
            for (int k; (k = next.getAndIncrement()) < chunks; ) {
                try {
                    encode(k);
                } catch (RuntimeException | Error e) {
                    // Never leave a claimed chunk unpublished: the caller would wait for it forever.
                    PUBLISHED.setRelease(published, k, FAILED);
                    return;
                }
            }
        }

        /** The slot length of chunk {@code c}, encoding it (and any unclaimed before it) here if nobody has claimed it. */
        int awaitOrEncode(int c) {
            while (true) {
                int length = (int) PUBLISHED.getAcquire(published, c);
                if (length > 0) {
                    return length;
                }
                if (length == FAILED) {
                    encode(c); // throws here, on the caller's thread, if it fails again
                    continue;
                }
                int k = next.get();
                if (k <= c) {
                    if (next.compareAndSet(k, k + 1)) {
                        encode(k);
                    }
                } else {
                    Thread.onSpinWait(); // the helper is encoding chunk c right now
                }
            }
        }

        private void encode(int k) {
            int from = k * chunkSize;
            int to = Math.min(from + chunkSize, end);
            int at = k * slot;
            int p = CborEncoder.intArrayAt(buf, at + TOKENS_AT, tokens, from, to);
            buf[p++] = tail; // extra keys (multimodal, LoRA): None for vLLM's chain, () for LMCache's
            PUBLISHED.setRelease(published, k, p - at);
        }
    }
}
