package lmcache4j.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

/**
 * The library location is taken from {@code LMCACHE_CUDART} in a fresh JVM: a path that does not
 * exist gives "unavailable: not found" and no exception, and nothing else is tried.
 */
class CudaStatusMainTest {
    @Test
    void lmcacheCudartPointingNowhereReportsNotFound() throws Exception {
        Result r = runStatusMain(Map.of("LMCACHE_CUDART", "/nonexistent/libcudart.so"));
        assertEquals(3, r.exit(), r.output());
        assertTrue(r.output().startsWith("CUDA runtime unavailable: not found: no libcudart at /nonexistent/libcudart.so"), r.output());
        assertTrue(!r.output().contains("Exception"), r.output());
    }

    @Test
    void lmcacheCudartPointingAtTheToolkitLoadsIt() throws Exception {
        Path lib = Path.of("/usr/local/cuda/lib64/libcudart.so");
        Result r = runStatusMain(Map.of("LMCACHE_CUDART", lib.toString()));
        assertTrue(r.output().startsWith("CUDA runtime available") || r.output().contains("cudaErrorInsufficientDriver"), r.output());
    }

    private record Result(int exit, String output) {
    }

    private static Result runStatusMain(Map<String, String> env) throws IOException, InterruptedException {
        String modulePath = System.getProperty("jdk.module.path");
        Path classes = Path.of(CudaRuntime.class.getProtectionDomain().getCodeSource().getLocation().getPath());
        List<String> cmd = new ArrayList<>(List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=lmcache4j.cuda", "--illegal-native-access=deny",
                "-p", modulePath != null ? modulePath : classes.toString(),
                "-m", "lmcache4j.cuda/lmcache4j.cuda.internal.CudaStatusMain"));
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
        pb.environment().putAll(env);
        Process p = pb.start();
        if (!p.waitFor(60, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError("CudaStatusMain did not finish in 60 s");
        }
        return new Result(p.exitValue(), new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip());
    }
}
