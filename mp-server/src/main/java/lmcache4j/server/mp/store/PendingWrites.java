package lmcache4j.server.mp.store;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The write reservations of an {@link MpObjectStore} not yet finished or aborted, by owner, with
 * the caps that keep a client from reserving without end (per owner and in all). Guarded by the
 * store's lock; holds no memory of its own (the reservations' objects are the store's).
 */
final class PendingWrites {
    private final int maxPerOwner;
    private final long maxTotal;
    private final Map<String, Map<Long, WriteReservation>> byOwner = new HashMap<>();
    private long total;
    private long nextId = 1;

    PendingWrites(int maxPerOwner, long maxTotal) {
        this.maxPerOwner = maxPerOwner;
        this.maxTotal = maxTotal;
    }

    /** Whether {@code owner} may hold another reservation: neither it nor the store is at its cap. */
    boolean admits(String owner) {
        Map<Long, WriteReservation> mine = byOwner.get(owner);
        return total < maxTotal && (mine == null || mine.size() < maxPerOwner);
    }

    /** A new pending reservation of {@code entries}, with the next id. */
    WriteReservation add(String owner, List<Slot> slots, List<MpObjectStore.Entry> entries, long deadlineNanos) {
        WriteReservation reservation = new WriteReservation(nextId++, owner, slots, entries, deadlineNanos);
        byOwner.computeIfAbsent(owner, o -> new LinkedHashMap<>()).put(reservation.id(), reservation);
        total++;
        return reservation;
    }

    /** Removes {@code reservation} if it is pending (this very object); false when it was finished, aborted or expired. */
    boolean take(WriteReservation reservation) {
        Map<Long, WriteReservation> mine = byOwner.get(reservation.owner());
        if (mine == null || mine.get(reservation.id()) != reservation) {
            return false;
        }
        mine.remove(reservation.id());
        if (mine.isEmpty()) {
            byOwner.remove(reservation.owner());
        }
        total--;
        return true;
    }

    /** Removes and returns every pending reservation of {@code owner}. */
    Collection<WriteReservation> takeAll(String owner) {
        Map<Long, WriteReservation> mine = byOwner.remove(owner);
        if (mine == null) {
            return List.of();
        }
        total -= mine.size();
        return mine.values();
    }

    /** The pending reservations whose deadline is at or before {@code now} (still pending: {@link #take} each). */
    List<WriteReservation> due(long now) {
        List<WriteReservation> late = new ArrayList<>();
        for (Map<Long, WriteReservation> mine : byOwner.values()) {
            for (WriteReservation reservation : mine.values()) {
                if (now - reservation.deadlineNanos >= 0) {
                    late.add(reservation);
                }
            }
        }
        return late;
    }

    long size() {
        return total;
    }

    void clear() {
        byOwner.clear();
        total = 0;
    }

    /** Every owner's table is non-empty and the count is theirs; returns the reservations, for the store's check. */
    List<WriteReservation> checkedAll() {
        long counted = 0;
        List<WriteReservation> all = new ArrayList<>();
        for (Map<Long, WriteReservation> mine : byOwner.values()) {
            if (mine.isEmpty()) {
                throw new IllegalStateException("MP store invariant broken: empty owner table");
            }
            counted += mine.size();
            all.addAll(mine.values());
        }
        if (counted != total) {
            throw new IllegalStateException("MP store invariant broken: pending count wrong");
        }
        return all;
    }
}
