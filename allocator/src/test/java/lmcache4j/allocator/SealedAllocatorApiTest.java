package lmcache4j.allocator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.Constructor;
import java.lang.reflect.Executable;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;

import lmcache4j.allocator.paged.PagedTensorMemoryAllocator;
import lmcache4j.allocator.pool.BufferAllocator;
import lmcache4j.allocator.pool.LazyGrowingAllocator;
import lmcache4j.allocator.pool.MixedMemoryAllocator;
import lmcache4j.allocator.tensor.TensorMemoryAllocator;
import org.junit.jupiter.api.Test;

/**
 * Memory goes back only through the reference count: no caller outside the allocator package can
 * make a {@link MemoryObj}, reclaim one, or reach a hook whose types are not exported.
 */
class SealedAllocatorApiTest {
    private static final List<Class<?>> ALLOCATOR_TYPES = List.of(MemoryObj.class, MemoryAllocator.class, HostMemoryAllocator.class,
            AbstractMemoryAllocator.class, TensorMemoryAllocator.class, PagedTensorMemoryAllocator.class,
            BufferAllocator.class, LazyGrowingAllocator.class, MixedMemoryAllocator.class);

    @Test
    void onlyTheThreeMemoryOwningAllocatorsExtendTheBase() {
        assertTrue(AbstractMemoryAllocator.class.isSealed());
        assertEquals(Set.of(TensorMemoryAllocator.class, PagedTensorMemoryAllocator.class, BufferAllocator.class),
                Set.of(AbstractMemoryAllocator.class.getPermittedSubclasses()));
        for (Class<?> c : AbstractMemoryAllocator.class.getPermittedSubclasses()) {
            assertTrue(Modifier.isFinal(c.getModifiers()), c + " must be final: its protected hooks stay unreachable");
        }
    }

    @Test
    void noCallerCanMakeAnObjectOrGiveItsMemoryBack() {
        assertEquals(0, MemoryObj.class.getConstructors().length, "MemoryObj has no public constructor");
        for (Class<?> c : ALLOCATOR_TYPES) {
            for (Method m : c.getMethods()) {
                assertTrue(!m.getName().equals("reclaim") && !m.getName().equals("releaseDeferringReclaim")
                        && !m.getName().equals("attachLeakTracker") && !m.getName().equals("ledgerEntry"),
                        c.getSimpleName() + "." + m.getName() + " is public");
            }
        }
    }

    @Test
    void noPublicOrProtectedSignatureNamesAnUnexportedType() {
        List<String> leaks = new ArrayList<>();
        for (Class<?> c : ALLOCATOR_TYPES) {
            List<Executable> members = new ArrayList<>(Arrays.asList(c.getDeclaredMethods()));
            members.addAll(Arrays.asList(c.getDeclaredConstructors()));
            for (Executable e : members) {
                if (!Modifier.isPublic(e.getModifiers()) && !Modifier.isProtected(e.getModifiers())) {
                    continue;
                }
                List<Class<?>> types = new ArrayList<>(Arrays.asList(e.getParameterTypes()));
                if (e instanceof Method m) {
                    types.add(m.getReturnType());
                }
                for (Class<?> t : types) {
                    if (t.getPackageName().startsWith("lmcache4j.allocator.internal")) {
                        leaks.add(c.getSimpleName() + "." + e.getName() + " uses " + t.getName());
                    }
                }
            }
        }
        assertEquals(List.of(), leaks, leaks.stream().collect(Collectors.joining("\n")));
    }
}
