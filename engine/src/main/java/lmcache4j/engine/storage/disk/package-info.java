/**
 * The file layer of the local disk tier: one self-describing file per chunk (a 4 KiB header, then
 * the payload, 4 KiB-aligned so that O_DIRECT can be used), atomic writes through a temp file and a
 * rename, CRC32C on every read, and a directory scan that rebuilds the index after a restart
 * (LMCache's disk tier keeps nothing usable across restarts, spec §3.5), with each recovered
 * payload checked before it is offered (the tier's start waits for the check unless
 * {@code local_disk.verify_in_background} lets chunks be offered as they pass). The tier deletes, overwrites and follows
 * only what it wrote ({@code ChunkFileOwnership}), in a directory its marker claims
 * ({@code ChunkDirectoryMarker}).
 *
 * <p>{@link lmcache4j.engine.storage.disk.ChunkFiles} is the entry point; the backend (index,
 * policy, executor) sits on top of it.
 */
package lmcache4j.engine.storage.disk;
