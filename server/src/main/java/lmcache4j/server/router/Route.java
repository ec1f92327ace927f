package lmcache4j.server.router;

/**
 * Where a prompt goes and why.
 *
 * @param instanceId   the chosen instance
 * @param cachedTokens leading tokens of the prompt the controller says it holds (0 when chosen without a prefix)
 * @param reason       how it was chosen
 */
public record Route(String instanceId, int cachedTokens, Reason reason) {
    /** How an instance was chosen. */
    public enum Reason {
        /** It alone holds the longest cached prefix. */
        LONGEST_PREFIX,
        /** Several hold the longest prefix: the least loaded of them, then the next in turn. */
        LONGEST_PREFIX_TIE,
        /** No instance holds any of the prompt: the least loaded, then the next in turn. */
        NO_PREFIX,
        /** The controller could not be asked: the least loaded, then the next in turn. */
        LOOKUP_FAILED
    }
}
