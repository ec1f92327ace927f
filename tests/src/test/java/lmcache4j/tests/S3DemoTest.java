package lmcache4j.tests;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import lmcache4j.engine.json.Json;
import lmcache4j.s3.proxy.S3ProxyProcess;

/**
 * {@code ./lmcache4j demo --remote s3://...} as users run it: the launcher's module path (the S3 module
 * and the AWS SDK's jars among lmcache4j's), credentials from the AWS chain's environment variables,
 * against a real S3 server. The first demo stores its chunks as objects; a second demo, its CPU tier
 * too small to hold the workload and with no disk, reads chunks back from S3; every byte is verified
 * by the demo itself (exit 0 means no mismatch and a remote that worked).
 */
@Timeout(600)
class S3DemoTest {
    private static final Path LAUNCHER = Path.of("..", "lmcache4j").toAbsolutePath().normalize();

    @Test
    void twoDemosShareAnS3Bucket(@TempDir Path tmp) throws Exception {
        try (S3ProxyProcess server = S3ProxyProcess.start("demo")) {
            Map<String, Object> first = demo(server, tmp);
            assertTrue(((Long) first.get("remote_puts")) > 0, "the first demo stored chunks in S3: " + first);
            try (Stream<Path> objects = Files.list(server.dataDirectory().resolve("demo"))) {
                assertTrue(objects.anyMatch(p -> p.getFileName().toString().startsWith("lmcache4j_demo")
                        || p.getFileName().toString().contains("@")), "objects under LMCache's flattened keys");
            }
            Map<String, Object> second = demo(server, tmp);
            assertTrue(((Long) second.get("remote_gets")) > 0, "the second demo read chunks back from S3: " + second);
            assertEquals(0L, second.get("mismatches"), second.toString());
            assertEquals(0L, second.get("remote_lost_puts"), second.toString());
        }
    }

    private static Map<String, Object> demo(S3ProxyProcess server, Path tmp) throws Exception {
        List<String> cmd = new ArrayList<>(List.of("bash", "-c", "source \"$1\"; shift; setup_java; run_cli \"$@\"", "demo",
                LAUNCHER.toString(), "lmcache4j.cli.DemoCommand", "--requests", "24", "--layers", "1", "--cpu-gb", "0.05",
                "--no-disk", "--json", "--remote", server.url("demo")));
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectError(tmp.resolve("demo-" + System.nanoTime() + ".err").toFile());
        pb.environment().put("AWS_ACCESS_KEY_ID", S3ProxyProcess.ACCESS_KEY_ID);
        pb.environment().put("AWS_SECRET_ACCESS_KEY", S3ProxyProcess.SECRET_ACCESS_KEY);
        pb.environment().put("AWS_REGION", "us-east-1");
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(300, TimeUnit.SECONDS), "the demo did not finish");
        assertEquals(0, p.exitValue(), "demo --remote " + server.url("demo") + " failed:\n" + out);
        String json = out.lines().filter(l -> l.startsWith("{")).reduce((a, b) -> b).orElseThrow(() -> new AssertionError(out));
        return Json.parseObject(json);
    }
}
