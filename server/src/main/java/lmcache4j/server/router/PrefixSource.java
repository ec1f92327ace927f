package lmcache4j.server.router;

import java.util.HashMap;
import java.util.Map;
import java.util.Objects;

import lmcache4j.server.controller.ControllerLookup;

/**
 * Where a router learns which instance caches how much of a prompt: for each instance, the leading
 * tokens it holds. The cache controller's index answers it in process ({@link #of(ControllerLookup)})
 * or over its HTTP API ({@link ControllerHttpPrefixSource}).
 */
@FunctionalInterface
public interface PrefixSource {
    /**
     * Instance id → leading tokens of {@code tokens} that instance holds (instances holding none may be absent).
     *
     * @throws RouterLookupException when the answer cannot be had; the router then routes without it
     */
    Map<String, Integer> cachedPrefixes(int[] tokens);

    /** The controller's own lookup, in this process. */
    static PrefixSource of(ControllerLookup lookup) {
        Objects.requireNonNull(lookup, "lookup");
        return tokens -> {
            Map<String, Integer> out = new HashMap<>();
            lookup.lookup(tokens).layout().forEach((instance, layout) -> out.put(instance, layout.tokens()));
            return out;
        };
    }
}
