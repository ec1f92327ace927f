package lmcache4j.allocator;

/** An allocator was closed while objects still held references or pins. Lists them. */
public final class AllocatorLeakException extends IllegalStateException {
    private static final long serialVersionUID = 1L;

    private final long liveObjects;

    public AllocatorLeakException(String allocator, long liveObjects, String listing) {
        super("cannot close allocator '" + allocator + "': " + liveObjects + " object(s) still live (leaked "
                + "references or pins; memory kept):\n" + listing);
        this.liveObjects = liveObjects;
    }

    /** How many objects were live. */
    public long liveObjects() {
        return liveObjects;
    }
}
