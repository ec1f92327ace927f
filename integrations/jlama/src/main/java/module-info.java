/**
 * lmcache4j for Jlama, the pure-Java inference engine: a prefill looks up the longest cached prefix
 * of its prompt, loads that KV into Jlama's KV buffer, runs the forward pass on the rest only, and
 * stores the prompt's KV for the next request ({@link lmcache4j.jlama.CachedPrefill}). Also writes
 * a Llama-architecture model with seeded random weights for machines without a model download
 * ({@link lmcache4j.jlama.SyntheticLlama}). Depends on the engine's public API only; the core
 * modules never depend on this one.
 */
module lmcache4j.jlama {
    requires transitive lmcache4j.engine;
    // Jlama 0.8.4 is an automatic module named from its jar; it reads its own dependencies from
    // the class path. Its tensors need jdk.incubator.vector at run time (--add-modules).
    requires transitive jlama.core;

    exports lmcache4j.jlama;
}
