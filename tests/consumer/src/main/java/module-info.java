/**
 * A user's module: it requires the engine and nothing else of lmcache4j (the allocator and the
 * CUDA bindings come with it, {@code requires transitive}). Its code is the README's quickstart.
 */
module lmcache4j.consumer {
    requires lmcache4j.engine;
}
