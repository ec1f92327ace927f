package lmcache4j.server.mp.store;

import lmcache4j.server.mp.wire.MpObjectKey;

/**
 * Where one object lives in the shared pool, as a worker needs it to copy: a byte range of the
 * shared segment and the tensor to view it as.
 *
 * @param index the key's position in the list the caller passed (LMCache's {@code chunk_indices})
 * @param key the object's key
 * @param offset the first byte, relative to the start of the shared segment
 * @param length the object's bytes ({@code layout.byteLength()})
 * @param layout the tensor shape and dtype of the object
 * @param generation which object this is: the same memory holding a later object has another
 *                   ({@link MpObjectStore#stillHolds})
 */
public record Slot(int index, MpObjectKey key, long offset, long length, ObjectLayout layout, long generation) {
}
