/**
 * Host memory for KV chunks: {@code HostArena}s (CUDA-pinned or anonymous mmap memory, optionally
 * hugepage-advised, mlocked and NUMA-bound) and the allocators that carve {@code MemoryObj}s out
 * of them. Knows nothing of keys, tiers or tokens. A program outside lmcache4j builds one through
 * {@code lmcache4j.allocator.HostMemoryAllocator}; the arenas and allocator classes themselves are
 * exported to the sibling modules only.
 */
module lmcache4j.allocator {
    requires transitive lmcache4j.cuda;

    exports lmcache4j.allocator;
    exports lmcache4j.allocator.host to lmcache4j.engine, lmcache4j.server, lmcache4j.server.mp, lmcache4j.bench, lmcache4j.cli;
    exports lmcache4j.allocator.tensor to lmcache4j.engine, lmcache4j.server, lmcache4j.server.mp, lmcache4j.bench, lmcache4j.tests;
    exports lmcache4j.allocator.tensor.internal to lmcache4j.bench;
    exports lmcache4j.allocator.paged to lmcache4j.server, lmcache4j.bench;
    exports lmcache4j.allocator.pool to lmcache4j.engine, lmcache4j.server, lmcache4j.bench, lmcache4j.tests;
    // every thread lmcache4j starts is made, named and joined through OwnedThreads
    exports lmcache4j.allocator.internal.threads to lmcache4j.engine, lmcache4j.server, lmcache4j.server.mp;
}
