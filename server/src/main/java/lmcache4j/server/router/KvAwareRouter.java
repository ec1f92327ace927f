package lmcache4j.server.router;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.LongAdder;

/**
 * KV-aware routing: a prompt goes to the instance the cache controller says holds its longest
 * cached prefix, so its KV is reused where it is instead of being recomputed or fetched from a
 * peer. Ties (several instances hold the same prefix) go to the least loaded of them; a prompt
 * nobody holds, or one the controller cannot be asked about, goes to the least loaded instance of
 * all. Equal loads are broken in turn (round robin), so an idle cluster still spreads new prompts.
 *
 * <p>Load is the caller's count of requests in flight: {@link #route} counts one more for the
 * chosen instance and {@link #finished} one less. Instances the controller names that are not in
 * this router's list are ignored (they may have registered after the router was made).
 *
 * <p>Thread-safe.
 */
public final class KvAwareRouter {
    private final List<String> instances;
    private final PrefixSource prefixes;
    private final AtomicLongArray inFlight;
    private final AtomicInteger turn = new AtomicInteger();
    private final LongAdder lookupFailures = new LongAdder();

    /**
     * @param instances the instances to route to, by {@code lmcache_instance_id}, at least one, no duplicates
     * @param prefixes  who holds which prefix: the controller
     */
    public KvAwareRouter(List<String> instances, PrefixSource prefixes) {
        this.instances = List.copyOf(instances);
        this.prefixes = Objects.requireNonNull(prefixes, "prefixes");
        if (this.instances.isEmpty()) {
            throw new IllegalArgumentException("a router needs at least one instance");
        }
        if (this.instances.stream().distinct().count() != this.instances.size()) {
            throw new IllegalArgumentException("instance ids repeat: " + this.instances);
        }
        this.inFlight = new AtomicLongArray(this.instances.size());
    }

    /** Chooses the instance for {@code tokens} and counts a request in flight there until {@link #finished}. */
    public Route route(int[] tokens) {
        Objects.requireNonNull(tokens, "tokens");
        Map<String, Integer> cached;
        try {
            cached = prefixes.cachedPrefixes(tokens);
        } catch (RuntimeException e) { // a router keeps routing when the controller cannot answer
            lookupFailures.increment();
            return admit(leastLoaded(allIndexes()), 0, Route.Reason.LOOKUP_FAILED);
        }
        int longest = 0;
        List<Integer> holders = new ArrayList<>();
        for (int i = 0; i < instances.size(); i++) {
            int tokensHeld = cached.getOrDefault(instances.get(i), 0);
            if (tokensHeld > longest) {
                longest = tokensHeld;
                holders.clear();
            }
            if (tokensHeld == longest && tokensHeld > 0) {
                holders.add(i);
            }
        }
        if (holders.isEmpty()) {
            return admit(leastLoaded(allIndexes()), 0, Route.Reason.NO_PREFIX);
        }
        if (holders.size() == 1) {
            return admit(holders.get(0), longest, Route.Reason.LONGEST_PREFIX);
        }
        return admit(leastLoaded(holders), longest, Route.Reason.LONGEST_PREFIX_TIE);
    }

    /** The request routed to {@code instanceId} has ended. */
    public void finished(String instanceId) {
        int i = instances.indexOf(instanceId);
        if (i < 0) {
            throw new IllegalArgumentException("unknown instance '" + instanceId + "'");
        }
        if (inFlight.getAndUpdate(i, n -> Math.max(0, n - 1)) == 0) {
            throw new IllegalStateException("instance '" + instanceId + "' has no request in flight");
        }
    }

    /** Requests in flight at {@code instanceId}. */
    public long inFlight(String instanceId) {
        int i = instances.indexOf(instanceId);
        if (i < 0) {
            throw new IllegalArgumentException("unknown instance '" + instanceId + "'");
        }
        return inFlight.get(i);
    }

    /** Routes chosen without the controller because it could not be asked. */
    public long lookupFailures() {
        return lookupFailures.sum();
    }

    /** The instances, in the order given. */
    public List<String> instances() {
        return instances;
    }

    private Route admit(int index, int cachedTokens, Route.Reason reason) {
        inFlight.incrementAndGet(index);
        return new Route(instances.get(index), cachedTokens, reason);
    }

    private List<Integer> allIndexes() {
        List<Integer> all = new ArrayList<>(instances.size());
        for (int i = 0; i < instances.size(); i++) {
            all.add(i);
        }
        return all;
    }

    /** The least loaded of {@code candidates}; among equals, the first at or after the next turn. */
    private int leastLoaded(List<Integer> candidates) {
        int start = Math.floorMod(turn.getAndIncrement(), instances.size());
        int best = -1;
        long bestLoad = Long.MAX_VALUE;
        for (int k = 0; k < instances.size(); k++) {
            int i = (start + k) % instances.size();
            if (candidates.contains(i) && inFlight.get(i) < bestLoad) {
                best = i;
                bestLoad = inFlight.get(i);
            }
        }
        return best;
    }
}
