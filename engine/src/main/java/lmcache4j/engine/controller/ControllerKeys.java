package lmcache4j.engine.controller;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;

import org.agrona.collections.Long2ObjectHashMap;
import org.agrona.collections.Object2LongHashMap;

import lmcache4j.engine.key.ChunkHash;
import lmcache4j.engine.key.ChunkHasher;
import lmcache4j.engine.key.ChunkRange;

/**
 * The one place where a chunk becomes the integer key of LMCache's control plane: what workers
 * report to the cache controller, what the controller hashes a lookup's tokens to, what a
 * scheduler sends its workers' lookup services and what the P2P lookup asks for. Which integer is
 * a named setting, {@code controller_chunk_keys} ({@link Scheme}), LMCache's by default. Keys are
 * 64 bits kept in a {@code long} (negative when the top bit is set; written on the wire as uint64).
 */
public final class ControllerKeys {
    private ControllerKeys() {
    }

    /** How a chunk becomes a controller key. */
    public enum Scheme {
        /**
         * LMCache's token database (since it folds hashes to ints): its own chain of 64-bit keys,
         * {@link ChunkHasher#nextIntKey}, from the same seed and chunk size. What an LMCache worker
         * reports, so lmcache4j and LMCache workers share one controller.
         */
        LMCACHE("lmcache"),
        /**
         * vLLM's block hash folded as vLLM folds it for its KV events ({@code maybe_convert_block_hash}:
         * the digest's low 64 bits): the chunk's 32-byte digest, which is vLLM's
         * {@code hash_block_tokens} chain with the block size set to the chunk size.
         */
        VLLM("vllm");

        private final String configName;

        Scheme(String configName) {
            this.configName = configName;
        }

        /** Its name in {@code controller_chunk_keys}. */
        public String configName() {
            return configName;
        }

        /** The scheme named {@code name}; an unknown name is an error naming the valid ones. */
        public static Scheme fromName(String name) {
            for (Scheme s : values()) {
                if (s.configName.equals(name.toLowerCase(Locale.ROOT))) {
                    return s;
                }
            }
            throw new IllegalArgumentException("unknown controller_chunk_keys '" + name + "'; valid: lmcache, vllm");
        }
    }

    /** vLLM's fold of a digest: its last 8 bytes, big-endian ({@code int.from_bytes(h, "big") & (2**64 - 1)}). */
    public static long vllmFold(ChunkHash hash) {
        long bits = 0;
        int n = hash.length();
        for (int i = Math.max(0, n - Long.BYTES); i < n; i++) {
            bits = (bits << 8) | (hash.byteAt(i) & 0xff);
        }
        return bits;
    }

    /**
     * The keys of a prompt's chunks: {@code digests[i]} is chunk i's digest ({@link ChunkHasher#next}
     * chain) and covers {@code tokens} up to {@code ends[i]} (exclusive), chunk i starting where
     * chunk i - 1 ended.
     */
    public static long[] keys(Scheme scheme, ChunkHasher hasher, int[] tokens, List<ChunkHash> digests, int[] ends) {
        if (digests.size() != ends.length) {
            throw new IllegalArgumentException(digests.size() + " digests but " + ends.length + " chunk ends");
        }
        long[] keys = new long[ends.length];
        if (scheme == Scheme.VLLM) {
            for (int i = 0; i < keys.length; i++) {
                keys[i] = vllmFold(digests.get(i));
            }
            return keys;
        }
        long parent = hasher.noneIntKey();
        int start = 0;
        for (int i = 0; i < keys.length; i++) {
            parent = hasher.nextIntKey(parent, tokens, start, ends[i]);
            keys[i] = parent;
            start = ends[i];
        }
        return keys;
    }

    /**
     * The keys of a prepared prompt's chunks ({@code tokens} is the prompt they were cut from).
     * Chunks keyed in LMCache's current form ({@code storage_chunk_keys: lmcache}) already carry
     * LMCache's integers, so that scheme takes them as they are; vLLM's scheme then hashes the
     * prompt's digest chain itself.
     */
    public static long[] of(Scheme scheme, ChunkHasher hasher, int[] tokens, List<ChunkRange> chunks) {
        boolean integers = !chunks.isEmpty() && chunks.getFirst().key().chunkHash().isInteger();
        long[] keys = new long[chunks.size()];
        if (integers && scheme == Scheme.LMCACHE) {
            for (int i = 0; i < keys.length; i++) {
                keys[i] = chunks.get(i).key().chunkHash().asLong();
            }
            return keys;
        }
        List<ChunkHash> digests = new ArrayList<>(chunks.size());
        int[] ends = new int[chunks.size()];
        ChunkHash parent = hasher.noneHash();
        int start = 0;
        for (int i = 0; i < ends.length; i++) {
            ends[i] = chunks.get(i).end();
            if (integers) {
                parent = hasher.next(parent, tokens, start, ends[i]);
                digests.add(parent);
            } else {
                digests.add(chunks.get(i).key().chunkHash());
            }
            start = ends[i];
        }
        return keys(scheme, hasher, tokens, digests, ends);
    }

    /** The key as the Python int LMCache would print: unsigned decimal. */
    public static String toDecimal(long key) {
        return Long.toUnsignedString(key);
    }

    /**
     * The chunks this engine has keyed recently, both ways: digest to controller key (for the
     * admits, evicts and full syncs a worker reports, and the P2P lookups it asks) and key to
     * digest (for the lookups a scheduler sends in keys). LMCache's keys come from the tokens, so
     * only a chunk this engine hashed from tokens has one; under {@link Scheme#VLLM} every digest
     * has its key. Bounded: past {@code capacity} chunks the oldest are forgotten. Thread-safe.
     */
    public static final class Index {
        private final Scheme scheme;
        private final Long2ObjectHashMap<ChunkHash> byKey = new Long2ObjectHashMap<>();
        private final Object2LongHashMap<ChunkHash> byDigest = new Object2LongHashMap<>(Long.MIN_VALUE);
        private final ChunkHash[] order;
        private int next;

        public Index(Scheme scheme, int capacity) {
            this.scheme = Objects.requireNonNull(scheme, "scheme");
            if (capacity < 1) {
                throw new IllegalArgumentException("capacity must be >= 1, was " + capacity);
            }
            this.order = new ChunkHash[capacity];
        }

        public Scheme scheme() {
            return scheme;
        }

        /** Remembers that {@code digest}'s chunk has controller key {@code key}. */
        public synchronized void record(ChunkHash digest, long key) {
            if (byDigest.containsKey(digest)) {
                byKey.put(key, digest);
                return;
            }
            ChunkHash evicted = order[next];
            if (evicted != null) {
                long old = byDigest.removeKey(evicted);
                if (evicted.equals(byKey.get(old))) { // equal, not the same instance: a re-record may have replaced it
                    byKey.remove(old);
                }
            }
            order[next] = digest;
            next = (next + 1) % order.length;
            byDigest.put(digest, key);
            byKey.put(key, digest);
        }

        /** The controller key of {@code digest}'s chunk, when known. */
        public synchronized OptionalLong key(ChunkHash digest) {
            if (scheme == Scheme.VLLM) {
                return OptionalLong.of(vllmFold(digest));
            }
            long key = byDigest.getValue(digest);
            return key == Long.MIN_VALUE && !byDigest.containsKey(digest) ? OptionalLong.empty() : OptionalLong.of(key);
        }

        /** The digest of the chunk keyed {@code key}, if this engine keyed it recently. */
        public synchronized Optional<ChunkHash> digest(long key) {
            return Optional.ofNullable(byKey.get(key));
        }

        /** Chunks remembered. */
        public synchronized int size() {
            return byDigest.size();
        }
    }
}
