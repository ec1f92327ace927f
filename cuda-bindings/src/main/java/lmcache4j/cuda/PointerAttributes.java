package lmcache4j.cuda;

/**
 * {@code struct cudaPointerAttributes}: what the runtime knows of a pointer.
 *
 * @param type          where the memory lives
 * @param device        the device it belongs to (or -2 / invalid for unregistered host memory)
 * @param devicePointer the address usable on the device, 0 if none
 * @param hostPointer   the address usable on the host, 0 if none
 */
public record PointerAttributes(MemoryType type, int device, long devicePointer, long hostPointer) {
}
