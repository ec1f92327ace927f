/**
 * Bindings to the CUDA runtime and to the few libc calls host memory management needs, generated
 * by jextract (in the unexported {@code lmcache4j.cuda.internal.*} packages) and wrapped in a
 * small Java-shaped API, and lmcache4j's streaming-store host copy ({@code lmcache4j.cuda.cpu}).
 * This is the only lmcache4j module that makes native calls, so it is the only one to grant native
 * access: {@code --enable-native-access=lmcache4j.cuda}.
 */
module lmcache4j.cuda {
    exports lmcache4j.cuda;
    exports lmcache4j.cuda.posix to lmcache4j.allocator, lmcache4j.engine, lmcache4j.bench, lmcache4j.cli;
    // Runs unchecked machine code on what StreamingCopyBatch admits: the engine's host copies only.
    exports lmcache4j.cuda.cpu to lmcache4j.engine;
}
