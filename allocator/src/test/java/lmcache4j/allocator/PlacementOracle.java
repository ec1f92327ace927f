package lmcache4j.allocator;

/**
 * A reference model of where an allocator places objects, for differential tests: given the same
 * operations it must answer the same addresses as the allocator under test.
 */
public interface PlacementOracle {
    /** The address of an allocation of {@code physical} bytes, or -1 when it does not fit. */
    long allocate(long physical);

    /** Addresses of {@code count} allocations of {@code unit} bytes into {@code out}, or false (nothing changed). */
    boolean allocateBatch(long unit, int count, long[] out);

    /** The allocation at {@code address} of {@code physical} bytes went back. */
    void free(long address, long physical);
}
