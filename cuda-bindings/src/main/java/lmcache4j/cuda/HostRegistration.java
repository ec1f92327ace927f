package lmcache4j.cuda;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

import lmcache4j.cuda.internal.cudart.cudart_h;

/**
 * A host region page-locked with {@code cudaHostRegister}, made of one or more pieces (drivers
 * refuse single registrations above 64 GiB). {@link #close()} unregisters every piece; the memory
 * itself stays with its owner.
 */
public final class HostRegistration extends NativeResource {
    private final CudaRuntime runtime;
    private final MemorySegment region;
    private final List<MemorySegment> pieces;

    HostRegistration(CudaRuntime runtime, MemorySegment region, List<MemorySegment> pieces) {
        this.runtime = runtime;
        this.region = region;
        this.pieces = List.copyOf(pieces);
    }

    /** Splits {@code region} into consecutive slices of at most {@code pieceBytes}. */
    static List<MemorySegment> split(MemorySegment region, long pieceBytes) {
        if (pieceBytes <= 0) {
            throw new IllegalArgumentException("piece size must be positive, was " + pieceBytes);
        }
        List<MemorySegment> pieces = new ArrayList<>();
        for (long offset = 0; offset < region.byteSize(); offset += pieceBytes) {
            pieces.add(region.asSlice(offset, Math.min(pieceBytes, region.byteSize() - offset)));
        }
        return pieces;
    }

    /** The registered region. */
    public MemorySegment region() {
        ensureOpen();
        return region;
    }

    /** How many {@code cudaHostRegister} calls it took. */
    public int pieceCount() {
        return pieces.size();
    }

    @Override
    protected void release() {
        CudaException first = null;
        for (MemorySegment piece : pieces) {
            int rc = cudart_h.cudaHostUnregister(piece);
            if (rc != CudaError.SUCCESS && first == null) {
                first = new CudaException("cudaHostUnregister(0x" + Long.toHexString(piece.address()) + ")",
                        CudaRuntime.decode(rc));
            }
        }
        if (first != null) {
            throw first;
        }
    }

    @Override
    public String toString() {
        return "HostRegistration[0x" + Long.toHexString(region.address()) + ", " + region.byteSize() + " bytes, "
                + pieces.size() + " piece(s)]";
    }
}
