package lmcache4j.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code ./lmcache4j config}: the effective config with sources, exit codes, usage errors. */
class ConfigCommandTest {
    @TempDir
    Path dir;

    private record Run(int exit, String out, String err) {
        String line(String key) {
            return out.lines().filter(l -> l.startsWith(key + " ")).findFirst()
                    .orElseThrow(() -> new AssertionError("no line for " + key + " in:\n" + out));
        }
    }

    private static Run run(Map<String, String> env, String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int exit = ConfigCommand.run(List.of(args), env, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Run(exit, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    @Test
    void defaultsArePrintedOneAlignedLinePerFieldWithTheirSource() {
        Run r = run(Map.of());
        assertEquals(0, r.exit(), r.err());
        assertEquals("", r.err());
        List<String> lines = r.out().lines().toList();
        assertTrue(lines.getFirst().startsWith("# lmcache4j effective config; file: none"), lines.getFirst());
        assertTrue(r.line("chunk_size").matches("chunk_size +=  ?256 +\\(default\\)"), r.line("chunk_size"));
        assertTrue(r.line("pre_caching_hash_algorithm").contains("\"sha256_cbor\""));
        int column = lines.get(1).indexOf(" = ");
        lines.stream().skip(1).forEach(l -> assertEquals(column, l.indexOf(" = "), l));
    }

    @Test
    void fileEnvAndSetAreLayeredAndEachLineNamesItsSource() throws IOException {
        Path yaml = dir.resolve("lmcache.yaml");
        Files.writeString(yaml, """
                chunk_size: 512
                local_disk: file:///mnt/nvme0/
                enable_blending: true
                extra_config: {ping_interval: 15}
                """);
        Run r = run(Map.of("LMCACHE_CONFIG_FILE", yaml.toString(), "LMCACHE_MAX_LOCAL_CPU_SIZE", "40"),
                "--set", "cache_policy=lfu", "--set=retrieve_locations=LocalCPUBackend,LocalDiskBackend");
        assertEquals(0, r.exit(), r.err());
        assertTrue(r.out().startsWith("# lmcache4j effective config; file: " + yaml), r.out());
        assertTrue(r.line("chunk_size").matches("chunk_size +=  ?512 +\\(file " + yaml + "\\)"), r.line("chunk_size"));
        assertTrue(r.line("local_disk").contains("\"/mnt/nvme0/\""), r.line("local_disk"));
        assertTrue(r.line("max_local_cpu_size").matches("max_local_cpu_size += 40\\.0 +\\(env LMCACHE_MAX_LOCAL_CPU_SIZE\\)"),
                r.line("max_local_cpu_size"));
        assertTrue(r.line("cache_policy").contains("\"LFU\"") && r.line("cache_policy").endsWith("(--set)"));
        assertTrue(r.line("retrieve_locations").contains("[\"LocalCPUBackend\", \"LocalDiskBackend\"]"));
        assertTrue(r.line("save_unfull_chunk").endsWith("(derived: enable_blending=true forces it)"));
        assertTrue(r.line("extra_config.ping_interval").contains("= 15"), r.out());
    }

    @Test
    void anExplicitFileArgumentWinsOverTheVariable() throws IOException {
        Path named = Files.writeString(dir.resolve("a.yaml"), "chunk_size: 64\n");
        Path given = Files.writeString(dir.resolve("b.yaml"), "chunk_size: 32\n");
        Run r = run(Map.of("LMCACHE_CONFIG_FILE", named.toString()), "--file", given.toString());
        assertEquals(0, r.exit());
        assertTrue(r.line("chunk_size").contains("32"), r.out());
    }

    @Test
    void aBadConfigPrintsEveryProblemAndExitsTwo() throws IOException {
        Path yaml = Files.writeString(dir.resolve("bad.yaml"), "chunk_sise: 1\ntransfer_channel: nixl\n");
        Run r = run(Map.of("LMCACHE_PRE_CACHING_HASH_ALGORITHM", "builtin"), "--file", yaml.toString());
        assertEquals(2, r.exit());
        assertEquals("", r.out());
        assertTrue(r.err().contains("invalid lmcache4j config (3 problems)"), r.err());
        assertTrue(r.err().contains("did you mean 'chunk_size'?"), r.err());
        assertTrue(r.err().contains("transfer_channel = \"nixl\" (file " + yaml + ") is not valid: NIXL (GPU RDMA) is not "
                + "supported by lmcache4j; its one channel is tcp"), r.err());
        assertTrue(r.err().contains("Use sha256_cbor"), r.err());
    }

    @Test
    void aDeeplyNestedFileIsOneLineAndExitTwo() throws IOException {
        Path yaml = Files.writeString(dir.resolve("deep.yaml"), "a: " + "[".repeat(10_000) + "\n");
        Run r = run(Map.of(), "--file", yaml.toString());
        assertEquals(2, r.exit(), r.err());
        assertEquals("lmcache4j config: invalid lmcache4j config: config file " + yaml
                + " is nested deeper than 64 levels (line 1); lmcache4j's config nests a few levels at most", r.err().strip());
    }

    @Test
    void warningsGoToStandardError() {
        Run r = run(Map.of("LMCACHE_NOT_A_FIELD", "1"));
        assertEquals(0, r.exit());
        assertTrue(r.err().startsWith("lmcache4j config: warning: ignoring environment variable LMCACHE_NOT_A_FIELD"), r.err());
    }

    @Test
    void usageErrorsExitTwoAndHelpExitsZero() {
        Run help = run(Map.of(), "--help");
        assertEquals(0, help.exit());
        assertTrue(help.out().startsWith("usage: ./lmcache4j config"), help.out());
        for (String[] args : List.of(new String[] {"--set"}, new String[] {"--set", "novalue"},
                new String[] {"--bogus"}, new String[] {"--file"})) {
            Run r = run(Map.of(), args);
            assertEquals(2, r.exit(), String.join(" ", args));
            assertTrue(r.err().strip().endsWith("(./lmcache4j config --help lists the options)"), r.err());
            assertEquals(1, r.err().lines().count(), r.err());
        }
        Run unknown = run(Map.of(), "--set", "bogus_key=1");
        assertEquals(2, unknown.exit());
        assertTrue(unknown.err().contains("unknown config key 'bogus_key' (--set)"), unknown.err());
    }

    /** The secret file is read at an engine's start; config says now what would stop it then (exit 2, as for any bad field). */
    @Test
    void aDeploymentSecretFileTheEngineCouldNotUseIsABadConfig(@TempDir Path dir) throws IOException {
        Path missing = dir.resolve("nosuch");
        Run none = run(Map.of(), "--set", "deployment_secret_file=" + missing);
        assertEquals(2, none.exit(), none.out() + none.err());
        assertTrue(none.err().contains("deployment_secret_file: the secret file " + missing + " does not exist"), none.err());
        Path open = dir.resolve("open");
        Files.writeString(open, "0123456789abcdef0123456789abcdef\n");
        Files.setPosixFilePermissions(open, java.nio.file.attribute.PosixFilePermissions.fromString("rw-r--r--"));
        Run readable = run(Map.of(), "--set", "deployment_secret_file=" + open);
        assertEquals(2, readable.exit(), readable.out() + readable.err());
        assertTrue(readable.err().contains("readable by others") && readable.err().contains("chmod 600"), readable.err());
        Files.setPosixFilePermissions(open, java.nio.file.attribute.PosixFilePermissions.fromString("rw-------"));
        Run good = run(Map.of(), "--set", "deployment_secret_file=" + open);
        assertEquals(0, good.exit(), good.err());
    }
}
