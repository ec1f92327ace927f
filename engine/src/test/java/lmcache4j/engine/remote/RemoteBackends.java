package lmcache4j.engine.remote;

import lmcache4j.engine.remote.serde.RemoteSerde;
import lmcache4j.engine.storage.MemoryProvider;

/** A remote tier over a serde object, for tests outside this package (the public constructors take its name). */
public final class RemoteBackends {
    private RemoteBackends() {
    }

    /** A tier with a 2 s blocking timeout and no health pings, storing through {@code serde}. */
    public static RemoteBackend withSerde(RemoteConnector remote, MemoryProvider memory, RemoteSerde serde) {
        return new RemoteBackend(remote, memory, 2, 3600, 1, false, serde);
    }
}
