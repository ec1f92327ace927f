package lmcache4j.bench.pd;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

import org.junit.jupiter.api.Test;

import lmcache4j.allocator.DType;
import lmcache4j.engine.ModelMetadata;

/**
 * {@code bench pd}'s transfer figure, small: every way moves the bytes, each rate is a finite positive number, the CPU
 * time each way is counted, and the bare stream into distinct memory lands each chunk in its own room (the bench checks
 * it and throws otherwise).
 */
class PdTransferBenchTest {
    @Test
    void everyWayMovesTheSameBytes() throws IOException {
        ModelMetadata model = new ModelMetadata("bench/pd", 1, 0, DType.FLOAT32, 4, 2, 32, false);
        ByteArrayOutputStream log = new ByteArrayOutputStream();
        PdTransferBench.Result r = PdTransferBench.run(model, 64, 1, 2, new PrintStream(log, true, StandardCharsets.UTF_8));
        assertEquals(64 * model.chunkBytes(256), r.bytes());
        for (double gbps : new double[] {r.pdGbps(), r.unkeyedGbps(), r.bareGbps(), r.bareDistinctGbps()}) {
            assertTrue(gbps > 0 && Double.isFinite(gbps), r.toString());
        }
        assertTrue(log.toString(StandardCharsets.UTF_8).contains("run 1: PD"), log.toString(StandardCharsets.UTF_8));
        PdTransferBench.Cpu cpu = r.cpuMsPerGib(); // the process's CPU time, counted in scheduler ticks: some ways may show 0
        double[] ways = {cpu.pd(), cpu.unkeyed(), cpu.bare(), cpu.bareDistinct()};
        for (double ms : ways) {
            assertTrue(ms >= 0 && Double.isFinite(ms), cpu.toString());
        }
        assertTrue(java.util.Arrays.stream(ways).sum() > 0, "moving 32 MiB four ways took some CPU: " + cpu);
    }
}
