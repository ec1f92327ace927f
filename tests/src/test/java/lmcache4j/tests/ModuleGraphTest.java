package lmcache4j.tests;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.module.ModuleDescriptor;
import java.lang.module.ModuleFinder;
import java.lang.module.ModuleReference;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;

/**
 * The module graph users get: named modules on the module path, native access granted to
 * {@code lmcache4j.cuda} and to nothing else, and no generated binding package exported.
 */
class ModuleGraphTest {
    private static Module module(String name) {
        return ModuleLayer.boot().findModule(name)
                .orElseThrow(() -> new AssertionError(name + " is not a named module in the boot layer"));
    }

    @Test
    void onlyTheBindingsModuleHasNativeAccess() {
        assertTrue(module("lmcache4j.cuda").isNativeAccessEnabled());
        assertFalse(module("lmcache4j.allocator").isNativeAccessEnabled());
        assertFalse(module("lmcache4j.engine").isNativeAccessEnabled());
        assertFalse(getClass().getModule().isNativeAccessEnabled());
    }

    @Test
    void generatedBindingsAreNotExported() {
        Module cuda = module("lmcache4j.cuda");
        assertEquals(Set.of("lmcache4j.cuda", "lmcache4j.cuda.posix", "lmcache4j.cuda.cpu"), cuda.getDescriptor().exports().stream()
                .map(e -> e.source()).collect(Collectors.toSet()));
        assertTrue(cuda.getPackages().contains("lmcache4j.cuda.internal.cudart"));
        assertFalse(cuda.isExported("lmcache4j.cuda.internal.cudart"));
        assertFalse(cuda.isExported("lmcache4j.cuda.internal.libc"));
    }

    /** The descriptor of every lmcache4j module, read from each module's compiled classes (cli and bench are not in this layer). */
    private static final Map<String, ModuleDescriptor> DESCRIPTORS = ModuleFinder.of(
                    Stream.of("cuda-bindings", "allocator", "engine", "s3", "server", "mp-server", "integrations/jlama", "bench", "cli")
                            .map(folder -> Path.of("..", folder, "target", "classes")).toArray(Path[]::new))
            .findAll().stream().map(ModuleReference::descriptor)
            .collect(Collectors.toMap(ModuleDescriptor::name, d -> d));

    /** The lmcache4j modules {@code name} requires. */
    private static Set<String> requires(String name) {
        ModuleDescriptor d = DESCRIPTORS.get(name);
        assertNotNull(d, name + " has no module descriptor");
        return d.requires().stream().map(ModuleDescriptor.Requires::name).filter(n -> n.startsWith("lmcache4j."))
                .collect(Collectors.toSet());
    }

    @Test
    void theModulesRequireEachOtherInDesignOrder() {
        assertEquals(Set.of(), requires("lmcache4j.cuda"));
        assertEquals(Set.of("lmcache4j.cuda"), requires("lmcache4j.allocator"));
        assertEquals(Set.of("lmcache4j.allocator"), requires("lmcache4j.engine"), "the engine knows no server and no command");
        assertEquals(Set.of("lmcache4j.engine"), requires("lmcache4j.server"));
        assertEquals(Set.of("lmcache4j.engine", "lmcache4j.server"), requires("lmcache4j.server.mp"),
                "the MP server: the engine's tiers, and the HTTP server and bind failure of lmcache4j.server");
        assertFalse(requires("lmcache4j.server").contains("lmcache4j.server.mp"), "the other servers know nothing of the MP server");
        assertEquals(Set.of("lmcache4j.engine"), requires("lmcache4j.s3"), "the S3 tier plugs into the engine's remote seam, nothing more");
        assertFalse(requires("lmcache4j.engine").contains("lmcache4j.s3"), "the engine finds the S3 tier through ServiceLoader");
        assertEquals(Set.of("lmcache4j.engine"), requires("lmcache4j.jlama"), "an integration uses the engine's API only");
        for (String core : List.of("lmcache4j.cuda", "lmcache4j.allocator", "lmcache4j.engine", "lmcache4j.server", "lmcache4j.server.mp")) {
            assertFalse(requires(core).contains("lmcache4j.jlama"), core + " depends on an inference engine");
        }
        assertEquals(Set.of("lmcache4j.server", "lmcache4j.server.mp", "lmcache4j.jlama", "lmcache4j.s3"), requires("lmcache4j.bench"), "benchmarks and the demo workload");
        assertEquals(Set.of("lmcache4j.bench", "lmcache4j.server", "lmcache4j.server.mp", "lmcache4j.engine", "lmcache4j.jlama", "lmcache4j.s3"),
                requires("lmcache4j.cli"));
        for (String app : List.of("lmcache4j.bench", "lmcache4j.cli")) {
            assertTrue(DESCRIPTORS.get(app).requires().stream().anyMatch(r -> r.name().equals("lmcache4j.jlama")
                    && r.modifiers().contains(ModuleDescriptor.Requires.Modifier.STATIC)),
                    app + " requires Jlama only statically: no other command resolves it");
        }
        DESCRIPTORS.keySet().forEach(m -> assertFalse(requires(m).contains("lmcache4j.cli"), m + " requires the commands"));
    }
}
