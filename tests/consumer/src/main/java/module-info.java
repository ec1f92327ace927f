/**
 * A user's module: it requires the engine and nothing else of lmcache4j (the allocator and the
 * CUDA bindings come with it, {@code requires transitive}). Its code is the README's quickstart and
 * a program that reads and writes a shared store through the remote connectors with its own allocator, and
 * one that runs disaggregated prefill's sender and receiver.
 */
module lmcache4j.consumer {
    requires lmcache4j.engine;
}
