package lmcache4j.engine.pd.wire;

import java.lang.foreign.MemorySegment;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Function;

import lmcache4j.engine.pd.PdBackend;

/**
 * A decoder's PD tier as its receive server drives it: room for a sender's allocation request, and
 * each chunk write into that room. {@link PdBackend} keeps these off its public face, which is the
 * engine's exported API, since they take and give wire messages and write into the tier's memory;
 * it hands them over here once, when its class loads, and only lmcache4j's own modules can see this
 * package.
 */
public interface PdRooms {
    /**
     * Answers a sender's allocation request: room for each chunk not held yet, in order, until the
     * buffer is full. Never blocks.
     */
    AllocResponse allocate(AllocRequest request);

    /**
     * Starts the write of {@code slotId}'s chunk of {@code payloadBytes}; empty (counted as a late
     * write) when that slot is not waiting for a write of that size: expired, written already, never
     * given, or of another size.
     */
    Optional<Landing> beginWrite(long slotId, long payloadBytes);

    /** A write in progress into one slot's room: finish it with {@link #landed()} or {@link #discard(boolean)}. */
    interface Landing {
        /** The room the payload goes into. */
        MemorySegment segment();

        /** The payload arrived whole and its tag is good: the chunk is now seen by lookups. */
        void landed();

        /**
         * The write failed: its tag was wrong ({@code tagFailure}) or the connection broke. The room
         * is freed; nothing of it is ever served.
         */
        void discard(boolean tagFailure);
    }

    /** The rooms of {@code tier}. */
    static PdRooms of(PdBackend tier) {
        Objects.requireNonNull(tier, "tier");
        return Handover.rooms.apply(tier); // set: an instance exists, so its class has loaded
    }

    /** Called by {@link PdBackend} when its class loads, and by nothing else. */
    static void handOver(Function<PdBackend, PdRooms> rooms) {
        if (Handover.rooms != null) {
            throw new IllegalStateException("the PD tier's rooms were handed over already");
        }
        Handover.rooms = Objects.requireNonNull(rooms, "rooms");
    }

    /** Where the tier's class leaves its access. */
    final class Handover {
        private static volatile Function<PdBackend, PdRooms> rooms;

        private Handover() {
        }
    }
}
