package lmcache4j.server.pd;

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The proxy's record of the requests it waits for: each expects one ready notice per decoder rank
 * (LMCache's proxy counts {@code finished_reqs[req_id]} up to the number of ranks). Only requests
 * the proxy sent are recorded, at most {@code capacity} at once, so a notice for anything else is
 * counted and dropped and the table cannot be grown from outside.
 */
final class PdNoticeBoard {
    /** What a notice was. */
    enum Posted { COUNTED, UNKNOWN, EXTRA }

    private final int capacity;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition arrived = lock.newCondition();
    private final Map<String, int[]> waiting = new HashMap<>(); // reqId → {expected, received}
    private final AtomicLong counted = new AtomicLong();
    private final AtomicLong unknown = new AtomicLong();
    private final AtomicLong extra = new AtomicLong();
    private final AtomicLong timeouts = new AtomicLong();

    PdNoticeBoard(int capacity) {
        if (capacity < 1) {
            throw new IllegalArgumentException("the notice board holds at least one request");
        }
        this.capacity = capacity;
    }

    /** Starts waiting for {@code ranks} notices of {@code reqId}; false when the board is full. */
    boolean expect(String reqId, int ranks) {
        lock.lock();
        try {
            if (waiting.size() >= capacity || waiting.containsKey(reqId)) {
                return false;
            }
            waiting.put(reqId, new int[] {ranks, 0});
            return true;
        } finally {
            lock.unlock();
        }
    }

    /** A notice arrived for {@code reqId}. */
    Posted post(String reqId) {
        lock.lock();
        try {
            int[] w = waiting.get(reqId);
            if (w == null) {
                unknown.incrementAndGet();
                return Posted.UNKNOWN;
            }
            if (w[1] >= w[0]) {
                extra.incrementAndGet();
                return Posted.EXTRA;
            }
            w[1]++;
            counted.incrementAndGet();
            arrived.signalAll();
            return Posted.COUNTED;
        } finally {
            lock.unlock();
        }
    }

    /**
     * Waits until every expected notice of {@code reqId} has arrived, at most {@code timeout}; forgets
     * the request either way.
     *
     * @return whether they all arrived
     */
    boolean await(String reqId, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        lock.lock();
        try {
            int[] w = waiting.get(reqId);
            if (w == null) {
                return false;
            }
            while (w[1] < w[0]) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    timeouts.incrementAndGet();
                    return false;
                }
                arrived.await(left, TimeUnit.NANOSECONDS);
            }
            return true;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        } finally {
            waiting.remove(reqId);
            lock.unlock();
        }
    }

    /** Forgets {@code reqId} (its request failed before it waited). */
    void forget(String reqId) {
        lock.lock();
        try {
            waiting.remove(reqId);
        } finally {
            lock.unlock();
        }
    }

    /** Requests waited for now. */
    int size() {
        lock.lock();
        try {
            return waiting.size();
        } finally {
            lock.unlock();
        }
    }

    long counted() {
        return counted.get();
    }

    long unknown() {
        return unknown.get();
    }

    long extra() {
        return extra.get();
    }

    long timeouts() {
        return timeouts.get();
    }
}
