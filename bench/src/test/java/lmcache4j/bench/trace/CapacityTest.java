package lmcache4j.bench.trace;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;

import org.junit.jupiter.api.Test;

/** Capacities as operators write them, resolved to blocks of a trace. */
class CapacityTest {
    private static final Trace TRACE = new Trace("t", 512, List.of(), 1000);

    @Test
    void everyUnitResolvesToWholeBlocks() {
        assertEquals(1709, Capacity.parse("1%").blocks(TRACE, 170_899, ModelShape.DEFAULT));
        assertEquals(5859, Capacity.parse("3Mt").blocks(TRACE, 0, ModelShape.DEFAULT));
        assertEquals(5859, Capacity.parse("3000000t").blocks(TRACE, 0, ModelShape.DEFAULT));
        assertEquals(2, Capacity.parse("1.5kt").blocks(TRACE, 0, ModelShape.DEFAULT));
        assertEquals(42, Capacity.parse("42b").blocks(TRACE, 0, ModelShape.DEFAULT));
        // 1 GB of Llama-3-8B KV: 10^9 / (512 x 131072) = 14.9 blocks
        assertEquals(14, Capacity.parse("1GB").blocks(TRACE, 0, ModelShape.DEFAULT));
        assertEquals(16, Capacity.parse("1GiB").blocks(TRACE, 0, ModelShape.DEFAULT));
        assertEquals(1, Capacity.parse("0.0001%").blocks(TRACE, 100, ModelShape.DEFAULT), "at least one block");
        assertEquals(8, Capacity.parseList("1%,2%,3Mt,5%,10%,15%,20%,25%").size());
    }

    @Test
    void garbageIsRefusedNamingTheUnits() {
        for (String bad : List.of("3", "3M", "-1%", "0b", "x%", "NaNGB", "1e999t", "3mt")) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Capacity.parse(bad), bad);
            assertTrue(e.getMessage().contains("capacity '" + bad + "'"), e.getMessage());
        }
        assertThrows(IllegalArgumentException.class, () -> Capacity.parseList(" , "));
    }

    @Test
    void modelShapesByNameOrBytes() {
        assertEquals(131_072, ModelShape.parse("Llama-3-8B").bytesPerToken());
        assertEquals(327_680, ModelShape.parse("llama-3-70b").bytesPerToken());
        assertEquals(1000, ModelShape.parse("1000").bytesPerToken());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ModelShape.parse("gpt-9"));
        assertTrue(e.getMessage().contains("llama-3-8b"), e.getMessage());
    }
}
