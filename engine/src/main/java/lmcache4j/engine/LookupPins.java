package lmcache4j.engine;

import java.lang.System.Logger.Level;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;

import lmcache4j.engine.config.LMCacheEngineConfig;
import lmcache4j.engine.storage.StorageManager;
import lmcache4j.engine.storage.TieredPrefix;

/**
 * The pins of pinning lookups, by lookup id, until the retrieve naming the id, an unpin, or LMCache's
 * pin monitor: every {@code pin_check_interval_sec} the pins of lookups older than
 * {@code pin_timeout_sec} are released, so a caller that forgets a lookup cannot keep chunks
 * unevictable for ever. A retrieve that comes later still loads what is cached; only the guarantee
 * against eviction is gone.
 */
final class LookupPins {
    private static final System.Logger LOG = System.getLogger(LMCacheEngine.class.getName());

    private final StorageManager storage;
    private final LMCacheEngineConfig config;
    private final EngineThreads threads;
    private final Map<String, Pin> pins = new ConcurrentHashMap<>();
    private final LongAdder expired = new LongAdder();
    private final AtomicBoolean monitorStarted = new AtomicBoolean();

    /** A lookup's pins and when they were taken. */
    private record Pin(TieredPrefix prefix, long pinnedAtNanos) {
    }

    LookupPins(StorageManager storage, LMCacheEngineConfig config, EngineThreads threads) {
        this.storage = storage;
        this.config = config;
        this.threads = threads;
    }

    /** Keeps {@code prefix}'s pins for {@code lookupId} (the caller released any it had before). */
    void put(String lookupId, TieredPrefix prefix) {
        pins.put(lookupId, new Pin(prefix, System.nanoTime()));
        if (monitorStarted.compareAndSet(false, true)) {
            long every = config.pinCheckIntervalSec();
            threads.timer().scheduleWithFixedDelay(this::expire, every, every, TimeUnit.SECONDS);
        }
    }

    /** Releases the pins of {@code lookupId}; does nothing if it has none. */
    void release(String lookupId) {
        Pin pinned = pins.remove(lookupId);
        if (pinned != null) {
            storage.unpin(pinned.prefix());
        }
    }

    /** Releases every pin (the engine closing). */
    void releaseAll() {
        for (String id : List.copyOf(pins.keySet())) {
            release(id);
        }
    }

    /** Lookups whose pins the monitor released. */
    long expired() {
        return expired.sum();
    }

    private void expire() {
        try {
            releaseOlderThan(System.nanoTime());
        } catch (RuntimeException e) { // a failed scan must not end the schedule (it would never run again)
            LOG.log(Level.WARNING, "the scan for expired lookup pins failed: " + e);
        }
    }

    private void releaseOlderThan(long now) {
        long timeout = TimeUnit.SECONDS.toNanos(config.pinTimeoutSec());
        int released = 0;
        for (Map.Entry<String, Pin> e : pins.entrySet()) {
            Pin pin = e.getValue();
            // remove(key, value): a newer lookup with the same id keeps its own pins.
            if (now - pin.pinnedAtNanos() > timeout && pins.remove(e.getKey(), pin)) {
                storage.unpin(pin.prefix());
                expired.increment();
                released++;
            }
        }
        if (released > 0) {
            int n = released;
            LOG.log(Level.WARNING, () -> "released the pins of " + n + " lookup(s) older than pin_timeout_sec ("
                    + config.pinTimeoutSec() + " s) that no retrieve or lookupUnpin ended");
        }
    }
}
