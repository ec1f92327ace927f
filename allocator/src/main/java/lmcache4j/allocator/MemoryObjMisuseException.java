package lmcache4j.allocator;

/**
 * A {@link MemoryObj} was used against its lifecycle: released or unpinned below zero, used after
 * its memory went back, freed twice, or handed to an allocator that does not own it. The message
 * names the object and the misuse. The object's state is unchanged by the failed call.
 */
public final class MemoryObjMisuseException extends IllegalStateException {
    private static final long serialVersionUID = 1L;

    public MemoryObjMisuseException(String message) {
        super(message);
    }
}
