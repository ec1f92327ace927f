package lmcache4j.server.mp.wire;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Writes (and, for Java clients and tests, reads) LMCache's {@code PrepareStoreResponse} and
 * {@code PrepareRetrieveResponse} with their {@link TransferContext}
 * (docs/design/mp-server.md §4.3, §6.2–6.3), byte-exact with msgspec 0.22.0: the dataclass
 * fields in declaration order, then the context map as LMCache's server builds it.
 */
public final class MpTransferCodec {
    /** The most slots a decoded context may hold (a prompt of 4 Mi tokens in 256-token chunks is 16 Ki). */
    public static final int MAX_SLOTS = 1 << 20;

    private MpTransferCodec() {
    }

    /** {@code {"context": {...}}}. */
    public static byte[] encode(PrepareStoreResponse response) {
        MpWriter out = new MpWriter().mapHeader(1);
        out.key("context");
        writeContext(out, response.context());
        return out.toByteArray();
    }

    /** {@code {"success": b, "data": b"", "context": {...}}}. */
    public static byte[] encode(PrepareRetrieveResponse response) {
        MpWriter out = new MpWriter().mapHeader(3);
        out.key("success").bool(response.success());
        out.key("data").binary(new byte[0]);
        out.key("context");
        writeContext(out, response.context());
        return out.toByteArray();
    }

    private static void writeContext(MpWriter out, TransferContext context) {
        out.mapHeader((context.slots().isPresent() ? 1 : 0) + (context.chunkIndices().isPresent() ? 1 : 0));
        if (context.slots().isPresent()) {
            List<ShmSlot> slots = context.slots().get();
            out.key("slots").arrayHeader(slots.size());
            for (ShmSlot slot : slots) {
                out.mapHeader(4);
                out.key("offset").integer(slot.offset());
                out.key("length").integer(slot.length());
                out.key("shape").arrayHeader(slot.shape().size());
                for (long dim : slot.shape()) {
                    out.integer(dim);
                }
                out.key("dtype").string(slot.dtype());
            }
        }
        if (context.chunkIndices().isPresent()) {
            List<Integer> indices = context.chunkIndices().get();
            out.key("chunk_indices").arrayHeader(indices.size());
            for (int index : indices) {
                out.integer(index);
            }
        }
    }

    /**
     * Decodes a prepare-store response frame.
     *
     * @throws MpProtocolException {@link MpDropReason#BAD_ARGUMENT} for malformed msgpack or a wrong type
     */
    public static PrepareStoreResponse decodeStore(byte[] frame) throws MpProtocolException {
        try (MpReader in = MpReader.of(frame)) {
            TransferContext context = TransferContext.EMPTY;
            int entries = in.readMapHeader("PrepareStoreResponse");
            for (int i = 0; i < entries; i++) {
                String field = in.readString("PrepareStoreResponse field name", MpKeyCodec.MAX_STRING_BYTES);
                if (field.equals("context")) {
                    context = readContext(in);
                } else {
                    in.skipValue("PrepareStoreResponse." + field);
                }
            }
            in.expectEnd("PrepareStoreResponse");
            return new PrepareStoreResponse(context);
        }
    }

    /**
     * Decodes a prepare-retrieve response frame; its {@code data} must be empty (pickled tensors
     * are LMCache's fallback, which lmcache4j does not read).
     *
     * @throws MpProtocolException {@link MpDropReason#BAD_ARGUMENT} for malformed msgpack, a wrong
     *     type, a missing {@code success} or non-empty {@code data}
     */
    public static PrepareRetrieveResponse decodeRetrieve(byte[] frame) throws MpProtocolException {
        try (MpReader in = MpReader.of(frame)) {
            Boolean success = null;
            TransferContext context = TransferContext.EMPTY;
            int entries = in.readMapHeader("PrepareRetrieveResponse");
            for (int i = 0; i < entries; i++) {
                String field = in.readString("PrepareRetrieveResponse field name", MpKeyCodec.MAX_STRING_BYTES);
                switch (field) {
                    case "success" -> success = in.readBool("success");
                    case "data" -> {
                        if (in.readBinary("data", Integer.MAX_VALUE).length != 0) {
                            throw MpReader.bad("PrepareRetrieveResponse.data holds pickled tensors (expected b\"\")");
                        }
                    }
                    case "context" -> context = readContext(in);
                    default -> in.skipValue("PrepareRetrieveResponse." + field);
                }
            }
            in.expectEnd("PrepareRetrieveResponse");
            if (success == null) {
                throw MpReader.bad("PrepareRetrieveResponse: missing required field 'success'");
            }
            return new PrepareRetrieveResponse(success, context);
        }
    }

    private static TransferContext readContext(MpReader in) throws MpProtocolException {
        Optional<List<ShmSlot>> slots = Optional.empty();
        Optional<List<Integer>> chunkIndices = Optional.empty();
        int entries = in.readMapHeader("context");
        for (int i = 0; i < entries; i++) {
            String field = in.readString("context key", MpKeyCodec.MAX_STRING_BYTES);
            switch (field) {
                case "slots" -> {
                    int count = in.readArrayHeader("slots", MAX_SLOTS);
                    List<ShmSlot> list = new ArrayList<>(count);
                    for (int s = 0; s < count; s++) {
                        list.add(readSlot(in));
                    }
                    slots = Optional.of(list);
                }
                case "chunk_indices" -> {
                    int count = in.readArrayHeader("chunk_indices", MAX_SLOTS);
                    List<Integer> list = new ArrayList<>(count);
                    for (int s = 0; s < count; s++) {
                        list.add((int) in.readLong("chunk_indices[" + s + "]", 0, Integer.MAX_VALUE));
                    }
                    chunkIndices = Optional.of(list);
                }
                default -> in.skipValue("context." + field);
            }
        }
        return new TransferContext(slots, chunkIndices);
    }

    private static ShmSlot readSlot(MpReader in) throws MpProtocolException {
        Long offset = null;
        Long length = null;
        List<Long> shape = null;
        String dtype = null;
        int entries = in.readMapHeader("slot");
        for (int i = 0; i < entries; i++) {
            String field = in.readString("slot key", MpKeyCodec.MAX_STRING_BYTES);
            switch (field) {
                case "offset" -> offset = in.readLong("slot.offset", 0, Long.MAX_VALUE);
                case "length" -> length = in.readLong("slot.length", 0, Long.MAX_VALUE);
                case "shape" -> {
                    int dims = in.readArrayHeader("slot.shape", 16);
                    List<Long> list = new ArrayList<>(dims);
                    for (int d = 0; d < dims; d++) {
                        list.add(in.readLong("slot.shape[" + d + "]", 0, Long.MAX_VALUE));
                    }
                    shape = list;
                }
                case "dtype" -> dtype = in.readString("slot.dtype", MpRegistrationCodec.MAX_DTYPE_BYTES);
                default -> in.skipValue("slot." + field);
            }
        }
        if (offset == null || length == null || shape == null || dtype == null) {
            throw MpReader.bad("slot: expected offset, length, shape and dtype");
        }
        return new ShmSlot(offset, length, shape, dtype);
    }
}
