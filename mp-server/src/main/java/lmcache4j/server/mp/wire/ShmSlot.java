package lmcache4j.server.mp.wire;

import java.util.List;
import java.util.Objects;

/**
 * One chunk's place in the shared-memory pool, as LMCache's {@code ShmSlotDescriptor.to_dict}
 * writes it inside a transfer context (docs/design/mp-server.md §4.3, §6.2): the worker views
 * {@code length} bytes at {@code offset} as a {@code dtype} tensor of {@code shape}.
 *
 * @param offset byte offset of the chunk in the pool
 * @param length the chunk's size in bytes
 * @param shape the tensor shape ({@code [2, L, T, H]}, or {@code [L, T, H]} for MLA)
 * @param dtype the torch dtype name without the {@code torch.} prefix
 */
public record ShmSlot(long offset, long length, List<Long> shape, String dtype) {

    /** Copies the shape and refuses nulls. */
    public ShmSlot {
        shape = List.copyOf(shape);
        Objects.requireNonNull(dtype, "dtype");
    }
}
