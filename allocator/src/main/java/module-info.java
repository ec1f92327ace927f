/**
 * Host memory for KV chunks: {@code HostArena}s (CUDA-pinned or anonymous mmap memory, optionally
 * hugepage-advised, mlocked and NUMA-bound) and the allocators that carve {@code MemoryObj}s out
 * of them. Knows nothing of keys, tiers or tokens.
 */
module lmcache4j.allocator {
    requires transitive lmcache4j.cuda;

    exports lmcache4j.allocator;
    exports lmcache4j.allocator.host;
    exports lmcache4j.allocator.tensor;
    exports lmcache4j.allocator.paged;
    exports lmcache4j.allocator.pool;
}
