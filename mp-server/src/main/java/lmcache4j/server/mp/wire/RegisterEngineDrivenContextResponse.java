package lmcache4j.server.mp.wire;

import java.util.Objects;
import java.util.Optional;

/**
 * LMCache's {@code RegisterEngineDrivenContextResponse} (docs/design/mp-server.md §4.3) in its
 * five-field form: older clients read {@code shm_name} and {@code pool_size} and ignore the rest;
 * newer ones treat a non-nil {@code error} as a rejection.
 *
 * @param shmName the POSIX shared-memory segment holding the pool, without a leading slash
 * @param poolSize the pool's size in bytes
 * @param scratchOffset the scratch area's offset in the pool (0 when there is none)
 * @param scratchSize the scratch area's size in bytes (0 when there is none)
 * @param error why the registration was declined; empty on success
 */
public record RegisterEngineDrivenContextResponse(String shmName, long poolSize, long scratchOffset,
        long scratchSize, Optional<String> error) {

    /** Refuses nulls and negative sizes or offsets. */
    public RegisterEngineDrivenContextResponse {
        Objects.requireNonNull(shmName, "shmName");
        if (poolSize < 0 || scratchOffset < 0 || scratchSize < 0) {
            throw new IllegalArgumentException("pool_size " + poolSize + ", scratch_offset " + scratchOffset
                    + ", scratch_size " + scratchSize + " (expected non-negative values)");
        }
        Objects.requireNonNull(error, "error");
    }

    /** A successful registration: attach to {@code shmName} of {@code poolSize} bytes. */
    public static RegisterEngineDrivenContextResponse accepted(String shmName, long poolSize) {
        return new RegisterEngineDrivenContextResponse(shmName, poolSize, 0, 0, Optional.empty());
    }

    /** A declined registration; the other fields keep LMCache's defaults. */
    public static RegisterEngineDrivenContextResponse rejected(String error) {
        return new RegisterEngineDrivenContextResponse("", 0, 0, 0, Optional.of(error));
    }
}
