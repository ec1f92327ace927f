/**
 * A user's module that wants host memory for KV and nothing else of lmcache4j: it requires the
 * allocator alone (the CUDA bindings come with it, {@code requires transitive}).
 */
module example.allocator {
    requires lmcache4j.allocator;
}
