package lmcache4j.allocator.host;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class HugePageSupportTest {
    @Test
    void readsTheSelectedModeAndThePools(@TempDir Path sys) throws IOException {
        Path thp = Files.writeString(sys.resolve("enabled"), "always [madvise] never\n");
        Path pools = sys.resolve("hugepages");
        Path p2m = Files.createDirectories(pools.resolve("hugepages-2048kB"));
        Files.writeString(p2m.resolve("nr_hugepages"), "512\n");
        Files.writeString(p2m.resolve("free_hugepages"), "100\n");
        HugePageSupport h = HugePageSupport.read(thp, pools);
        assertEquals("madvise", h.transparentMode());
        assertTrue(h.transparentHugePagesOnAdvice());
        assertEquals(List.of(new HugePageSupport.Pool(2L << 20, 512, 100)), h.pools());
    }

    @Test
    void neverMeansAdviceHasNoEffectAndMissingFilesMeanUnavailable(@TempDir Path sys) throws IOException {
        Path thp = Files.writeString(sys.resolve("enabled"), "always madvise [never]\n");
        assertFalse(HugePageSupport.read(thp, sys.resolve("none")).transparentHugePagesOnAdvice());
        HugePageSupport absent = HugePageSupport.read(sys.resolve("missing"), sys.resolve("none"));
        assertEquals("unavailable", absent.transparentMode());
        assertEquals(List.of(), absent.pools());
    }

    @Test
    void thisMachineIsReadable() {
        HugePageSupport h = HugePageSupport.read();
        assertFalse(h.transparentMode().isEmpty());
    }
}
