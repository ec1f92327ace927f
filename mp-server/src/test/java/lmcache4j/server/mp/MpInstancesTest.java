package lmcache4j.server.mp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Optional;

import org.junit.jupiter.api.Test;

import lmcache4j.allocator.DType;
import lmcache4j.server.mp.store.ObjectLayout;

class MpInstancesTest {
    private static final ObjectLayout BF16 = ObjectLayout.kv(2, 256, 64, DType.BFLOAT16);

    private static MpInstances.Instance instance(long id, String model, ObjectLayout layout) {
        return new MpInstances.Instance(id, model, 2, layout, false, 16);
    }

    @Test
    void layoutsAreSharedPerModelAndLiveWhileUsed() {
        MpInstances i = new MpInstances(8);
        assertEquals(Optional.empty(), i.register(instance(1, "m", BF16), 0));
        assertEquals(Optional.empty(), i.register(instance(2, "m", BF16), 0));
        assertEquals(Optional.empty(), i.register(instance(1, "m", BF16), 5), "a repeated registration refreshes");
        assertEquals(BF16, i.layout("m", 2).orElseThrow());
        assertTrue(i.unregister(1));
        assertTrue(i.layout("m", 2).isPresent(), "instance 2 still uses it");
        assertTrue(i.unregister(2));
        assertTrue(i.layout("m", 2).isEmpty());
        assertTrue(!i.unregister(2), "twice is a no-op");
    }

    @Test
    void aDifferentLayoutForTheSameModelOrTooManyInstancesAreRefusedWithAReason() {
        MpInstances i = new MpInstances(2);
        i.register(instance(1, "m", BF16), 0);
        ObjectLayout f32 = ObjectLayout.kv(2, 256, 64, DType.FLOAT32);
        assertTrue(i.register(instance(2, "m", f32), 0).orElseThrow().contains("chunk layout"));
        assertEquals(Optional.empty(), i.register(instance(3, "other", f32), 0));
        assertTrue(i.register(instance(4, "third", f32), 0).orElseThrow().contains("at most 2"));
    }

    @Test
    void silentInstancesAreNamed() {
        MpInstances i = new MpInstances(8);
        i.register(instance(1, "m", BF16), 0);
        i.register(instance(2, "m", BF16), 0);
        i.touch(2, 90);
        assertEquals(List.of(1L), i.silent(150, 100));
        assertEquals(2, i.size(), "the caller unregisters them");
    }
}
