package lmcache4j.tests;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Set;

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
        assertEquals(Set.of("lmcache4j.cuda", "lmcache4j.cuda.posix"), cuda.getDescriptor().exports().stream()
                .map(e -> e.source()).collect(java.util.stream.Collectors.toSet()));
        assertTrue(cuda.getPackages().contains("lmcache4j.cuda.internal.cudart"));
        assertFalse(cuda.isExported("lmcache4j.cuda.internal.cudart"));
        assertFalse(cuda.isExported("lmcache4j.cuda.internal.libc"));
    }

    /** The lmcache4j modules {@code name} requires. */
    private static Set<String> requires(String name) {
        return module(name).getDescriptor().requires().stream().map(r -> r.name()).filter(n -> n.startsWith("lmcache4j."))
                .collect(java.util.stream.Collectors.toSet());
    }

    @Test
    void theModulesRequireEachOtherInDesignOrder() {
        assertEquals(Set.of(), requires("lmcache4j.cuda"));
        assertEquals(Set.of("lmcache4j.cuda"), requires("lmcache4j.allocator"));
        assertEquals(Set.of("lmcache4j.allocator"), requires("lmcache4j.engine"), "the engine knows no server and no command");
        assertEquals(Set.of("lmcache4j.engine"), requires("lmcache4j.server"));
    }
}
