package lmcache4j.cli;

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Optional;

import lmcache4j.allocator.DType;
import lmcache4j.engine.key.ChunkHasher;
import lmcache4j.engine.key.ChunkRange;
import lmcache4j.engine.key.ChunkedTokenDatabase;
import lmcache4j.engine.key.HashAlgorithm;
import lmcache4j.engine.key.KeyFactory;

/**
 * {@code ./lmcache4j keys --model NAME [...]}: reads token ids on stdin and prints one line per
 * chunk, {@code start end key}, with the keys LMCache (sha256_cbor, same seed) would compute.
 * Exit status 0, or 2 for a bad argument or bad input (the message says which).
 */
public final class KeysCommand {
    static final String USAGE = """
            usage: ./lmcache4j keys --model NAME [--world-size N] [--worker-id N] [--dtype D]
                                    [--chunk-size N] [--seed S] [--save-unfull-chunk] < tokens
            Reads token ids (non-negative integers separated by whitespace or commas; a surrounding
            [ ] is allowed, so a Python list pastes as is) on stdin and prints one line per chunk:
                start end key
            keyed as LMCache's ChunkedTokenDatabase with pre_caching_hash_algorithm sha256_cbor keys it.
              --model NAME         the model name in the keys (required; no '@')
              --world-size N       tensor-parallel world size (default 1)
              --worker-id N        this worker's rank, below the world size (default 0)
              --dtype D            KV dtype as keys name it: half, bfloat16, float, fp8_e4m3fn, ... (default bfloat16)
              --chunk-size N       tokens per chunk (default 256)
              --seed S             the hash seed, as vLLM's PYTHONHASHSEED (default: $PYTHONHASHSEED)
              --save-unfull-chunk  also key a final chunk shorter than the chunk size
            Without --seed and without PYTHONHASHSEED, NONE_HASH is random: the keys match no other process.
            """;

    private KeysCommand() {
    }

    public static void main(String[] args) {
        CliMain.exit("keys", () -> run(args, System.in, System.out, System.err, System.getenv()));
    }

    /** Parsed options. */
    record Options(String model, int worldSize, int workerId, DType dtype, int chunkSize, Optional<String> seed,
                   boolean saveUnfullChunk) {
    }

    /** A command line or an input that cannot be used; the message says why. */
    static final class UsageException extends Exception {
        private static final long serialVersionUID = 1L;

        UsageException(String message) {
            super(message);
        }
    }

    /**
     * Runs the command as {@link #main} does, without exiting: the exit status is returned.
     *
     * @param env the environment, for {@code PYTHONHASHSEED}
     */
    static int run(String[] args, InputStream in, PrintStream out, PrintStream err, Map<String, String> env) {
        for (String a : args) {
            if (a.equals("-h") || a.equals("--help")) {
                out.print(USAGE);
                return 0;
            }
        }
        try {
            Options o = parse(args);
            int[] tokens = readTokens(in);
            Optional<String> seed = o.seed().or(() -> Optional.ofNullable(env.get(ChunkHasher.SEED_ENV)));
            ChunkHasher hasher;
            if (seed.isPresent()) {
                hasher = ChunkHasher.seeded(HashAlgorithm.SHA256_CBOR, seed.get());
            } else {
                err.println("lmcache4j keys: warning: no --seed and no " + ChunkHasher.SEED_ENV + " in the environment, so "
                        + "NONE_HASH is random for this process and these keys match no other process; pass --seed "
                        + "(the PYTHONHASHSEED of the vLLM/LMCache processes to match)");
                hasher = ChunkHasher.withNoneHash(HashAlgorithm.SHA256_CBOR, ChunkHasher.randomNoneHash());
            }
            ChunkedTokenDatabase db = new ChunkedTokenDatabase(o.chunkSize(), o.saveUnfullChunk(), hasher,
                    new KeyFactory(o.model(), o.worldSize(), o.workerId(), o.dtype()));
            StringBuilder sb = new StringBuilder();
            for (ChunkRange r : db.processTokens(tokens)) {
                sb.append(r.start()).append(' ').append(r.end()).append(' ').append(r.key().toKeyString()).append('\n');
            }
            out.print(sb);
            out.flush();
            return 0;
        } catch (UsageException e) {
            err.println("lmcache4j keys: " + CliText.escape(e.getMessage()) + " (./lmcache4j keys --help lists the options)");
            return 2;
        } catch (IOException e) {
            err.println("lmcache4j keys: cannot read stdin: " + CliText.oneLine(e));
            return 2;
        }
    }

    static Options parse(String[] args) throws UsageException {
        String model = null;
        int worldSize = 1;
        int workerId = 0;
        DType dtype = DType.BFLOAT16;
        int chunkSize = 256;
        Optional<String> seed = Optional.empty();
        boolean saveUnfull = false;
        for (int i = 0; i < args.length; i++) {
            String arg = args[i];
            String name = arg;
            String inline = null;
            int eq = arg.indexOf('=');
            if (arg.startsWith("--") && eq > 0) {
                name = arg.substring(0, eq);
                inline = arg.substring(eq + 1);
            }
            if (name.equals("--save-unfull-chunk")) {
                if (inline != null) {
                    throw new UsageException("--save-unfull-chunk takes no value");
                }
                saveUnfull = true;
                continue;
            }
            String value;
            if (inline != null) {
                value = inline;
            } else if (i + 1 < args.length) {
                value = args[++i];
            } else {
                throw new UsageException(knownOption(name) ? name + " needs a value"
                        : "unknown option '" + CliText.echo(arg) + "'");
            }
            switch (name) {
                case "--model" -> model = value;
                case "--world-size" -> worldSize = positive(name, value, 1);
                case "--worker-id" -> workerId = positive(name, value, 0);
                case "--dtype" -> {
                    try {
                        dtype = DType.fromKeyName(value);
                    } catch (IllegalArgumentException e) {
                        throw new UsageException("--dtype: unknown dtype '" + CliText.echo(value) + "'; valid: "
                                + java.util.Arrays.stream(DType.values()).map(DType::keyName)
                                        .collect(java.util.stream.Collectors.joining(", ")));
                    }
                }
                case "--chunk-size" -> chunkSize = positive(name, value, 1);
                case "--seed" -> seed = Optional.of(value);
                default -> throw new UsageException("unknown option '" + CliText.echo(arg) + "'");
            }
        }
        if (model == null) {
            throw new UsageException("--model NAME is required");
        }
        if (model.isEmpty() || model.indexOf('@') >= 0) {
            throw new UsageException("--model '" + CliText.echo(model) + "' must be non-empty and contain no '@' (it separates key fields)");
        }
        if (workerId >= worldSize) {
            throw new UsageException("--worker-id " + workerId + " must be below --world-size " + worldSize);
        }
        return new Options(model, worldSize, workerId, dtype, chunkSize, seed, saveUnfull);
    }

    private static boolean knownOption(String name) {
        return switch (name) {
            case "--model", "--world-size", "--worker-id", "--dtype", "--chunk-size", "--seed" -> true;
            default -> false;
        };
    }

    private static int positive(String option, String value, int min) throws UsageException {
        try {
            int v = Integer.parseInt(value);
            if (v >= min) {
                return v;
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        throw new UsageException(option + " '" + CliText.echo(value) + "' must be an integer of at least " + min);
    }

    /** Token ids from {@code in}: non-negative ints separated by whitespace and/or commas, optionally in [ ]. */
    static int[] readTokens(InputStream in) throws IOException, UsageException {
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
        return java.util.Arrays.copyOf(tokens, n);
    }

    private static int token(String word, int index) throws UsageException {
        boolean digits = !word.isEmpty() && word.chars().allMatch(c -> c >= '0' && c <= '9');
        if (word.startsWith("-") && word.length() > 1 && word.substring(1).chars().allMatch(c -> c >= '0' && c <= '9')) {
            throw new UsageException("token " + index + " is " + CliText.echo(word) + "; token ids are non-negative");
        }
        if (!digits) {
            throw new UsageException("token " + index + " ('" + CliText.echo(word) + "') is not a number; expected non-negative "
                    + "integers separated by whitespace or commas");
        }
        try {
            return Integer.parseInt(word);
        } catch (NumberFormatException e) {
            throw new UsageException("token " + index + " (" + CliText.echo(word) + ") is larger than " + Integer.MAX_VALUE);
        }
    }
}
