package lmcache4j.tests.controller;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.stream.Collectors;

import lmcache4j.engine.controller.ControllerKeys;
import lmcache4j.engine.key.ChunkHash;
import lmcache4j.engine.key.ChunkHasher;
import lmcache4j.engine.key.HashAlgorithm;

/**
 * A prompt and its chunks as lmcache4j's engines key them for the controller: {@code chunkSize}-token
 * chunks (full chunks only, LMCache's default) keyed by LMCache's integer chain
 * ({@link ControllerKeys.Scheme#LMCACHE}, from lmcache4j's own {@link ChunkHasher}). The worker
 * simulator is handed these keys (or computes LMCache's itself, for admits without chunks), so what a
 * lookup is checked against is exactly the key an engine reports.
 */
record PromptChunks(int[] tokens, List<Chunk> chunks) {
    static final String SEED = "0";

    /** Tokens {@code [start, end)} keyed {@code key}. */
    record Chunk(int start, int end, long key) {
    }

    static PromptChunks of(int[] tokens, int chunkSize) {
        ChunkHasher hasher = ChunkHasher.seeded(HashAlgorithm.SHA256_CBOR, SEED);
        List<ChunkHash> chain = hasher.chain(tokens, chunkSize, false);
        int[] ends = new int[chain.size()];
        for (int i = 0; i < ends.length; i++) {
            ends[i] = (i + 1) * chunkSize;
        }
        long[] keys = ControllerKeys.keys(ControllerKeys.Scheme.LMCACHE, hasher, tokens, chain, ends);
        List<Chunk> chunks = new ArrayList<>();
        for (int i = 0; i < keys.length; i++) {
            chunks.add(new Chunk(i * chunkSize, ends[i], keys[i]));
        }
        return new PromptChunks(tokens, List.copyOf(chunks));
    }

    /** {@code n} token ids of a 128k vocabulary, the same for the same {@code seed}. */
    static int[] randomTokens(long seed, int n) {
        return new Random(seed).ints(n, 0, 128_000).toArray();
    }

    /** The simulator's admit command: {"op":"admit","location":..,"tokens":[..],"chunks":[[start,end,key],..]}. */
    String admitCommand(String location) {
        return "{\"op\":\"admit\",\"location\":\"" + location + "\",\"tokens\":" + ints(tokens)
                + ",\"chunks\":[" + chunks.stream().map(c -> "[" + c.start() + "," + c.end() + "," + c.key() + "]")
                .collect(Collectors.joining(",")) + "]}";
    }

    /** The simulator's evict command for the chunks from {@code fromChunk} on. */
    String evictCommand(String location, int fromChunk) {
        return "{\"op\":\"evict\",\"location\":\"" + location + "\",\"keys\":[" + chunks.subList(fromChunk, chunks.size())
                .stream().map(c -> Long.toString(c.key())).collect(Collectors.joining(",")) + "]}";
    }

    /** Tokens covered by whole chunks. */
    int chunkedTokens() {
        return chunks.isEmpty() ? 0 : chunks.getLast().end();
    }

    private static String ints(int[] values) {
        StringBuilder sb = new StringBuilder("[");
        for (int i = 0; i < values.length; i++) {
            sb.append(i == 0 ? "" : ",").append(values[i]);
        }
        return sb.append(']').toString();
    }
}
