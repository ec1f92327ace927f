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

    @Test
    void theModulesRequireEachOtherInDesignOrder() {
        assertTrue(module("lmcache4j.allocator").getDescriptor().requires().stream().anyMatch(r -> r.name().equals("lmcache4j.cuda")));
        assertTrue(module("lmcache4j.engine").getDescriptor().requires().stream().anyMatch(r -> r.name().equals("lmcache4j.allocator")));
        assertFalse(module("lmcache4j.cuda").getDescriptor().requires().stream().anyMatch(r -> r.name().startsWith("lmcache4j.")));
    }
}
