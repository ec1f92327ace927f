package lmcache4j.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;

import lmcache4j.engine.key.ChunkHash;
import lmcache4j.engine.key.ChunkHasher;
import lmcache4j.engine.key.HashAlgorithm;
import org.junit.jupiter.api.Test;

/** {@code ./lmcache4j keys} end to end, through {@link KeysCommand#run} with given stdin and environment. */
class KeysCommandTest {
    private record Run(int exit, String out, String err) {
    }

    private static Run run(String stdin, Map<String, String> env, String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int exit = KeysCommand.run(args, new ByteArrayInputStream(stdin.getBytes(StandardCharsets.UTF_8)),
                new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8), env);
        return new Run(exit, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    @Test
    void printsOneLinePerChunkWithLmcachesKeyString() {
        Run r = run("0 1 2 3\n4,5,6,7 8  9", Map.of(), "--model", "meta-llama/Llama-3.1-8B", "--seed", "12345",
                "--chunk-size", "4", "--world-size", "2", "--worker-id", "1", "--dtype", "half");
        assertEquals(0, r.exit(), r.err());
        assertEquals("", r.err());
        ChunkHasher hasher = ChunkHasher.seeded(HashAlgorithm.SHA256_CBOR, "12345");
        int[] tokens = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
        List<ChunkHash> chain = hasher.chain(tokens, 4, false);
        List<ChunkHash> ints = hasher.intChain(tokens, 4, false);
        // Both forms: LMCache's current integer key (unpadded hex), then the older digest key. The golden
        // vector "seed 12345, chunk 4, 10 small tokens" has the same first two digests.
        assertEquals(64, chain.get(0).toHex().length());
        assertEquals("0 4 meta-llama/Llama-3.1-8B@2@1@" + Long.toHexString(ints.get(0).asLong()) + "@half "
                + "meta-llama/Llama-3.1-8B@2@1@" + chain.get(0).toHex() + "@half\n"
                + "4 8 meta-llama/Llama-3.1-8B@2@1@" + Long.toHexString(ints.get(1).asLong()) + "@half "
                + "meta-llama/Llama-3.1-8B@2@1@" + chain.get(1).toHex() + "@half\n", r.out());
    }

    @Test
    void theFinalPartialChunkIsKeyedOnlyWhenAsked() {
        String tokens = "[1, 2, 3, 4, 5]";
        List<String> without = run(tokens, Map.of(), "--model", "m", "--seed", "0", "--chunk-size", "2").out().lines().toList();
        List<String> with = run(tokens, Map.of(), "--model=m", "--seed=0", "--chunk-size=2", "--save-unfull-chunk")
                .out().lines().toList();
        assertEquals(2, without.size());
        assertEquals(3, with.size());
        assertEquals(without, with.subList(0, 2));
        assertTrue(with.get(2).startsWith("4 5 m@1@0@"), with.get(2));
        assertTrue(with.get(2).endsWith("@bfloat16"), "bfloat16 is the default dtype: " + with.get(2));
        assertEquals(4, with.get(2).split(" ").length, "start, end, the key, the digest-form key");
    }

    @Test
    void pythonHashSeedFromTheEnvironmentIsTheDefaultSeed() {
        Run fromEnv = run("1 2", Map.of("PYTHONHASHSEED", "0"), "--model", "m", "--chunk-size", "2");
        Run explicit = run("1 2", Map.of(), "--model", "m", "--chunk-size", "2", "--seed", "0");
        assertEquals(explicit.out(), fromEnv.out());
        assertEquals("", fromEnv.err());
        Run overridden = run("1 2", Map.of("PYTHONHASHSEED", "0"), "--model", "m", "--chunk-size", "2", "--seed", "1");
        assertNotEquals(explicit.out(), overridden.out());
    }

    @Test
    void withoutASeedItWarnsThatKeysAreRandomPerProcess() {
        Run a = run("1 2", Map.of(), "--model", "m", "--chunk-size", "2");
        Run b = run("1 2", Map.of(), "--model", "m", "--chunk-size", "2");
        assertEquals(0, a.exit());
        assertTrue(a.err().contains("warning") && a.err().contains("random") && a.err().contains("--seed"), a.err());
        assertNotEquals(a.out(), b.out());
    }

    @Test
    void badArgumentsAndBadTokensExitWith2AndSayWhy() {
        assertUsage(run("1", Map.of()), "--model NAME is required");
        assertUsage(run("1", Map.of(), "--model", "m", "--chunk-size", "0"), "--chunk-size '0' must be an integer of at least 1");
        assertUsage(run("1", Map.of(), "--model", "m", "--world-size", "2", "--worker-id", "2"), "--worker-id 2 must be below --world-size 2");
        assertUsage(run("1", Map.of(), "--model", "m", "--dtype", "fp4"), "--dtype: unknown dtype 'fp4'");
        assertUsage(run("1", Map.of(), "--model", "a@b"), "must be non-empty and contain no '@'");
        assertUsage(run("1", Map.of(), "--model", "m", "--frobnicate", "1"), "unknown option '--frobnicate'");
        assertUsage(run("1", Map.of(), "--model"), "--model needs a value");
        assertUsage(run("1 2 x3", Map.of(), "--model", "m", "--seed", "0"), "token 2 ('x3') is not a number");
        assertUsage(run("1 -5", Map.of(), "--model", "m", "--seed", "0"), "token 1 is -5; token ids are non-negative");
        assertUsage(run("99999999999", Map.of(), "--model", "m", "--seed", "0"), "token 0 (99999999999) is larger than 2147483647");
    }

    @Test
    void inputEchoedInAnErrorHasItsControlBytesEscapedAndIsCut() {
        Run esc = run("1 2 \u001b[31mred\u001b[0m", Map.of(), "--model", "m", "--seed", "0");
        assertUsage(esc, "token 2 ('\\x1b[31mred\\x1b[0m') is not a number");
        Run title = run("1", Map.of(), "--model", "a@\u001b]0;owned\u0007", "--seed", "0");
        assertUsage(title, "--model 'a@\\x1b]0;owned\\x07' must be non-empty");
        Run option = run("1", Map.of(), "--\u009b2J", "x");
        assertUsage(option, "unknown option '--\\u009b2J'");
        Run dtype = run("1", Map.of(), "--model", "m", "--dtype", "half\rbfloat16");
        assertUsage(dtype, "--dtype: unknown dtype 'half\\rbfloat16'");
        Run seedless = run("1", Map.of(), "--model", "m", "--chunk-size", "\u001bc");
        assertUsage(seedless, "--chunk-size '\\x1bc' must be an integer");

        Run huge = run("1 " + "7x".repeat(50_000), Map.of(), "--model", "m", "--seed", "0");
        assertUsage(huge, "token 1 ('7x7x");
        assertTrue(huge.err().contains("... (100000 characters)"), huge.err());
        assertTrue(huge.err().length() < 400, "a long token is cut in the message: " + huge.err().length() + " characters");
    }

    /** Exit 2, nothing on stdout, and one line on stderr naming the problem, with no raw control character. */
    private static void assertUsage(Run r, String message) {
        assertEquals(2, r.exit(), r.err());
        assertEquals("", r.out());
        assertTrue(r.err().startsWith("lmcache4j keys: ") && r.err().contains(message), r.err());
        assertEquals(1, r.err().lines().count(), r.err());
        assertTrue(r.err().strip().chars().noneMatch(c -> c < 0x20 || (c >= 0x7f && c < 0xa0)), r.err());
    }

    @Test
    void helpPrintsTheUsage() {
        Run r = run("", Map.of(), "--help");
        assertEquals(0, r.exit());
        assertTrue(r.out().startsWith("usage: ./lmcache4j keys "), r.out());
    }

    @Test
    void noTokensNoLines() {
        Run r = run("  \n", Map.of(), "--model", "m", "--seed", "0");
        assertEquals(0, r.exit(), r.err());
        assertEquals("", r.out());
    }
}
