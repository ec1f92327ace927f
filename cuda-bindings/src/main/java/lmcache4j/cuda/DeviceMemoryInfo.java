package lmcache4j.cuda;

/**
 * The current device's memory, as {@code cudaMemGetInfo} reports it.
 *
 * @param freeBytes  bytes free
 * @param totalBytes bytes in all
 */
public record DeviceMemoryInfo(long freeBytes, long totalBytes) {
}
