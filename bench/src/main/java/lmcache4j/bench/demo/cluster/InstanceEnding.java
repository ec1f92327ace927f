package lmcache4j.bench.demo.cluster;

/** How an instance process ended. */
public enum InstanceEnding {
    /** It closed its engine at end of input and the allocator found nothing leaked. */
    CLOSED,
    /** It closed its engine and the allocator found objects never freed. */
    LEAK,
    /** It did not end by itself in time and was killed. */
    KILLED,
    /** It failed, or ended without saying it closed. */
    FAILED
}
