package lmcache4j.cli;

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Collectors;

import lmcache4j.allocator.DType;
import lmcache4j.engine.key.ChunkHasher;
import lmcache4j.engine.key.ChunkRange;
import lmcache4j.engine.key.ChunkedTokenDatabase;
import lmcache4j.engine.key.HashAlgorithm;
import lmcache4j.engine.key.KeyFactory;
import lmcache4j.engine.key.StorageKeys;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code ./lmcache4j keys --model NAME [...]}: reads token ids on stdin and prints one line per
 * chunk, {@code start end key digest-key}: the key in LMCache's current form (what
 * {@code storage_chunk_keys: lmcache} stores under) and in the older digest form
 * ({@code storage_chunk_keys: digest}), as LMCache (sha256_cbor, same seed) would compute them.
 * Exit status 0, or 2 for a bad argument or bad input (the message says which).
 */
@Command(name = "keys", description = {
        "Reads token ids (non-negative integers separated by whitespace or commas; a surrounding [ ] is allowed, so a "
                + "Python list pastes as is) on stdin and prints one line per chunk:",
        "    start end key digest-key",
        "keyed as LMCache's ChunkedTokenDatabase with pre_caching_hash_algorithm sha256_cbor keys it: key in LMCache's "
                + "current form (its 64-bit integer chain in hex; storage_chunk_keys: lmcache, the default), digest-key in "
                + "the older 64-hex-digit SHA-256 form (storage_chunk_keys: digest; LMCache before its PR #2999)."},
        footer = "Without --seed and without PYTHONHASHSEED, NONE_HASH is random: the keys match no other process.")
public final class KeysCommand implements CliMain.Command {
    private final InputStream in;
    private final PrintStream out;
    private final PrintStream err;
    private final Map<String, String> env;

    @Option(names = "--model", paramLabel = "NAME", order = 0,
            description = "the model name in the keys (required; no '@')")
    private String model;

    private int worldSize = 1;
    private int workerId;
    private DType dtype = DType.BFLOAT16;
    private int chunkSize = 256;

    @Option(names = "--seed", paramLabel = "S", order = 5, description = "the hash seed, as vLLM's PYTHONHASHSEED (default: $PYTHONHASHSEED)")
    private String seed;

    @Option(names = "--save-unfull-chunk", order = 6, description = "also key a final chunk shorter than the chunk size")
    private boolean saveUnfullChunk;

    private KeysCommand(InputStream in, PrintStream out, PrintStream err, Map<String, String> env) {
        this.in = in;
        this.out = out;
        this.err = err;
        this.env = env;
    }

    @Option(names = "--world-size", paramLabel = "N", order = 1, description = "tensor-parallel world size (default 1)")
    private void worldSize(String value) {
        worldSize = OptionValues.intAtLeast("--world-size", value, 1);
    }

    @Option(names = "--worker-id", paramLabel = "N", order = 2, description = "this worker's rank, below the world size (default 0)")
    private void workerId(String value) {
        workerId = OptionValues.intAtLeast("--worker-id", value, 0);
    }

    @Option(names = "--dtype", paramLabel = "D", order = 3,
            description = "KV dtype as keys name it: half, bfloat16, float, fp8_e4m3fn, ... (default bfloat16)")
    private void dtype(String value) {
        try {
            dtype = DType.fromKeyName(value);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("--dtype: unknown dtype '" + CliText.echo(value) + "'; valid: "
                    + Arrays.stream(DType.values()).map(DType::keyName).collect(Collectors.joining(", ")));
        }
    }

    @Option(names = "--chunk-size", paramLabel = "N", order = 4, description = "tokens per chunk (default 256)")
    private void chunkSize(String value) {
        chunkSize = OptionValues.intAtLeast("--chunk-size", value, 1);
    }

    public static void main(String[] args) {
        CliMain.exit("keys", () -> run(args, System.in, System.out, System.err, System.getenv()));
    }

    /**
     * Runs the command as {@link #main} does, without exiting: the exit status is returned.
     *
     * @param env the environment, for {@code PYTHONHASHSEED}
     */
    static int run(String[] args, InputStream in, PrintStream out, PrintStream err, Map<String, String> env) {
        return CliMain.execute(new CommandLine(new KeysCommand(in, out, err, env)), out, err, args);
    }

    @Override
    public Integer call() {
        int[] tokens;
        try {
            if (model == null) {
                throw new IllegalArgumentException("--model NAME is required");
            }
            if (model.isEmpty() || model.indexOf('@') >= 0) {
                throw new IllegalArgumentException("--model '" + CliText.echo(model) + "' must be non-empty and contain no '@' (it separates key fields)");
            }
            if (workerId >= worldSize) {
                throw new IllegalArgumentException("--worker-id " + workerId + " must be below --world-size " + worldSize);
            }
            tokens = readTokens(in); // bad input is a usage error too: the message names the token
        } catch (IllegalArgumentException e) {
            return CliMain.usageError(err, "keys", e.getMessage());
        } catch (IOException e) {
            err.println("lmcache4j keys: cannot read stdin: " + CliText.oneLine(e));
            return 2;
        }
        Optional<String> hashSeed = Optional.ofNullable(seed).or(() -> Optional.ofNullable(env.get(ChunkHasher.SEED_ENV)));
        ChunkHasher hasher;
        if (hashSeed.isPresent()) {
            hasher = ChunkHasher.seeded(HashAlgorithm.SHA256_CBOR, hashSeed.get());
        } else {
            err.println("lmcache4j keys: warning: no --seed and no " + ChunkHasher.SEED_ENV + " in the environment, so "
                    + "NONE_HASH is random for this process and these keys match no other process; pass --seed "
                    + "(the PYTHONHASHSEED of the vLLM/LMCache processes to match)");
            hasher = ChunkHasher.withNoneHash(HashAlgorithm.SHA256_CBOR, ChunkHasher.randomNoneHash());
        }
        KeyFactory keys = new KeyFactory(model, worldSize, workerId, dtype);
        List<ChunkRange> current = new ChunkedTokenDatabase(chunkSize, saveUnfullChunk, hasher, keys, StorageKeys.LMCACHE)
                .processTokens(tokens);
        List<ChunkRange> digest = new ChunkedTokenDatabase(chunkSize, saveUnfullChunk, hasher, keys, StorageKeys.DIGEST)
                .processTokens(tokens);
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < current.size(); i++) {
            ChunkRange r = current.get(i);
            sb.append(r.start()).append(' ').append(r.end()).append(' ').append(r.key().toKeyString()).append(' ')
                    .append(digest.get(i).key().toKeyString()).append('\n');
        }
        out.print(sb);
        out.flush();
        return 0;
    }

    /** Token ids from {@code in}: non-negative ints separated by whitespace and/or commas, optionally in [ ]. */
    static int[] readTokens(InputStream in) throws IOException {
        String text = new String(in.readAllBytes(), StandardCharsets.UTF_8).strip();
        if (text.startsWith("[") && text.endsWith("]")) {
            text = text.substring(1, text.length() - 1);
        }
        String[] words = text.split("[\\s,]+");
        int[] tokens = new int[words.length];
        int n = 0;
        for (String w : words) {
            if (w.isEmpty()) {
                continue;
            }
            tokens[n] = token(w, n);
            n++;
        }
        return Arrays.copyOf(tokens, n);
    }

    private static int token(String word, int index) {
        boolean digits = !word.isEmpty() && word.chars().allMatch(c -> c >= '0' && c <= '9');
        if (word.startsWith("-") && word.length() > 1 && word.substring(1).chars().allMatch(c -> c >= '0' && c <= '9')) {
            throw new IllegalArgumentException("token " + index + " is " + CliText.echo(word) + "; token ids are non-negative");
        }
        if (!digits) {
            throw new IllegalArgumentException("token " + index + " ('" + CliText.echo(word) + "') is not a number; expected non-negative "
                    + "integers separated by whitespace or commas");
        }
        try {
            return Integer.parseInt(word);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("token " + index + " (" + CliText.echo(word) + ") is larger than " + Integer.MAX_VALUE);
        }
    }
}
