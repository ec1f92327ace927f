package lmcache4j.engine.connector;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.Locale;
import java.util.Optional;

import lmcache4j.cuda.cpu.LibcMemcpy;
import lmcache4j.cuda.cpu.StreamingCopy;
import lmcache4j.cuda.cpu.StreamingCopyBatch;

/**
 * The routines the host connector can copy a plan's runs with, so that they can be measured
 * against each other ({@code ./lmcache4j bench store --copy-routine}) and the limit of a plain
 * copy found with the fastest of them.
 */
public enum HostCopyRoutine {
    /** lmcache4j's streaming-store routine ({@link StreamingCopy}: non-temporal AVX2 or SSE2 stores). */
    STREAMING_STORES("streaming"),
    /** The C library's {@code memcpy} through the FFM linker ({@link LibcMemcpy}), one call a run. */
    LIBC_MEMCPY("memcpy"),
    /** {@link MemorySegment#copy}: the JDK's copy stub, cached stores for short runs. */
    SEGMENT_COPY("segment-copy");

    private final String label;

    HostCopyRoutine(String label) {
        this.label = label;
    }

    /** The name options and reports use: {@code streaming}, {@code memcpy} or {@code segment-copy}. */
    public String label() {
        return label;
    }

    /** The routine named {@code label} (see {@link #label()}). */
    public static HostCopyRoutine fromLabel(String label) {
        String wanted = label.toLowerCase(Locale.ROOT);
        return Arrays.stream(values()).filter(r -> r.label.equals(wanted)).findFirst()
                .orElseThrow(() -> new IllegalArgumentException("no copy routine '" + label + "'; there are "
                        + Arrays.stream(values()).map(HostCopyRoutine::label).toList()));
    }

    /** The routine the connector uses by default: streaming stores where this machine runs them, else {@link #SEGMENT_COPY}. */
    public static HostCopyRoutine preferred() {
        return STREAMING_STORES.isAvailable() ? STREAMING_STORES : SEGMENT_COPY;
    }

    /** Whether this machine runs the routine ({@link #SEGMENT_COPY} always). */
    public boolean isAvailable() {
        return unavailabilityCause().isEmpty();
    }

    /** Why this machine does not run the routine; empty when it does. */
    public Optional<Throwable> unavailabilityCause() {
        return switch (this) {
            case STREAMING_STORES -> StreamingCopy.unavailabilityCause();
            case LIBC_MEMCPY -> LibcMemcpy.unavailabilityCause();
            case SEGMENT_COPY -> Optional.empty();
        };
    }

    /**
     * Copies one contiguous range with this routine on the calling thread, as a bulk copy would
     * (a range the routine refuses is copied with {@link MemorySegment#copy}).
     *
     * @throws UnsupportedOperationException when this machine does not run the routine
     */
    public void copy(MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, long length) {
        switch (this) {
            case STREAMING_STORES -> {
                try (StreamingCopyBatch batch = StreamingCopy.machine().orElseThrow(this::unavailable).newBatch(1)) {
                    if (!batch.add(src, srcOffset, dst, dstOffset, length)) {
                        MemorySegment.copy(src, srcOffset, dst, dstOffset, length);
                    }
                }
            }
            case LIBC_MEMCPY -> LibcMemcpy.machine().orElseThrow(this::unavailable).copy(src, srcOffset, dst, dstOffset, length);
            case SEGMENT_COPY -> MemorySegment.copy(src, srcOffset, dst, dstOffset, length);
        }
    }

    private UnsupportedOperationException unavailable() {
        return new UnsupportedOperationException("this machine does not run the " + label + " copy",
                unavailabilityCause().orElse(null));
    }
}
