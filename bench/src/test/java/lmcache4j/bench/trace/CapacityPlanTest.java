package lmcache4j.bench.trace;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.util.List;

import org.junit.jupiter.api.Test;

/** The plan on a prefix of the bundled trace: its targets, its interpolation, and the chart it draws. */
class CapacityPlanTest {
    @Test
    void targetsGrowWithTheShareAndTheChartDrawsEveryCurve() {
        Trace trace = TraceFile.bundled().prefix(1000);
        CapacityPlan.Plan plan = CapacityPlan.run(new CapacityPlan.Settings(trace, ModelShape.DEFAULT,
                List.of("KV_ADAPTIVE", "ARC"), Capacity.parseList("2%,20%,60%")), new PrintStream(new ByteArrayOutputStream()));
        assertEquals(3, plan.samples().size());
        long previous = 0;
        for (CapacityPlan.Target t : plan.targets()) {
            assertTrue(t.lruBlocks() >= previous, "a larger share needs at least as much cache");
            assertTrue(plan.lru().hits(t.lruBlocks()) >= t.hits() && plan.lru().hits(t.lruBlocks() - 1) < t.hits(),
                    "LRU's capacity is the smallest that reaches the target");
            previous = t.lruBlocks();
        }
        for (CapacityPlan.Sample s : plan.samples()) {
            for (long h : s.policies()) {
                assertTrue(h <= s.belady(), "no policy beats Belady");
            }
        }
        String svg = PlanChart.svg(plan);
        assertTrue(svg.startsWith("<svg xmlns=\"http://www.w3.org/2000/svg\"") && svg.strip().endsWith("</svg>"));
        assertEquals(4, svg.split("<polyline ").length - 1, "LRU's curve, Belady and two policies");
        assertTrue(svg.contains("KV_ADAPTIVE (replays)") && svg.contains("infinite cache") && svg.contains("90% of infinite"));
    }

    @Test
    void interpolationIsLogLinearBetweenSamples() {
        List<CapacityPlan.Sample> samples = List.of(new CapacityPlan.Sample(100, 10, List.of(10L)),
                new CapacityPlan.Sample(10_000, 30, List.of(30L)));
        assertEquals(1000, CapacityPlan.interpolate(samples, 20, CapacityPlan.Sample::belady).getAsDouble(), 1e-6);
        assertEquals(50, CapacityPlan.interpolate(samples, 5, CapacityPlan.Sample::belady).getAsDouble(), 1e-6);
        assertTrue(CapacityPlan.interpolate(samples, 31, CapacityPlan.Sample::belady).isEmpty());
    }
}
