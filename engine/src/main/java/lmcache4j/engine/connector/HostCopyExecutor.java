package lmcache4j.engine.connector;

import java.lang.foreign.MemorySegment;

/** Copies with {@link MemorySegment#copy}, for KV caches in host memory. Synchronous. */
public final class HostCopyExecutor implements CopyExecutor {
    @Override
    public void gather(CopyPlan plan, PagedKvCache kv, MemorySegment object) {
        for (int i = 0; i < plan.runs(); i++) {
            MemorySegment.copy(kv.layers().get(plan.layer(i)), plan.pagedOffset(i), object, plan.objectOffset(i), plan.length(i));
        }
    }

    @Override
    public void scatter(CopyPlan plan, MemorySegment object, PagedKvCache kv) {
        for (int i = 0; i < plan.runs(); i++) {
            MemorySegment.copy(object, plan.objectOffset(i), kv.layers().get(plan.layer(i)), plan.pagedOffset(i), plan.length(i));
        }
    }

    @Override
    public void finish() {
        // copies are done when they return
    }

    @Override
    public String name() {
        return "host";
    }

    @Override
    public void close() {
    }
}
