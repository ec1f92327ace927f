package lmcache4j.bench.demo.cluster;

/** How the multi-instance demo spreads requests over its instances, and whether instances fetch from peers. */
public enum Policy {
    /** Request i goes to instance i mod N; an instance reuses only what it computed itself. */
    ROUND_ROBIN("round_robin", "round robin, no P2P", false, false),
    /** Round robin; an instance fetches chunks it misses from the peer the controller names. */
    ROUND_ROBIN_P2P("round_robin_p2p", "round robin + P2P", false, true),
    /** The KV-aware router sends each prompt where the controller says its longest prefix is; P2P below. */
    KV_AWARE_P2P("kv_aware_p2p", "KV-aware routing + P2P", true, true);

    private final String key;
    private final String title;
    private final boolean kvAware;
    private final boolean p2p;

    Policy(String key, String title, boolean kvAware, boolean p2p) {
        this.key = key;
        this.title = title;
        this.kvAware = kvAware;
        this.p2p = p2p;
    }

    /** Its name in the JSON report. */
    public String key() {
        return key;
    }

    /** Its name in the text report. */
    public String title() {
        return title;
    }

    public boolean kvAware() {
        return kvAware;
    }

    public boolean p2p() {
        return p2p;
    }
}
