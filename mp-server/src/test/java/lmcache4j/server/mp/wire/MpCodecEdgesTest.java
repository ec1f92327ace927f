package lmcache4j.server.mp.wire;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.List;
import java.util.Optional;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/**
 * The structured codecs read by key: a field they do not know (a newer LMCache's) is skipped whole,
 * wherever it stands and whatever it holds, a multi-group field counts as used only when it holds
 * something, and a byte after the map is refused.
 */
class MpCodecEdgesTest {
    private static final ShmSlot SLOT = new ShmSlot(1, 2, List.of(3L, 4L), "bf16");

    private static byte[] trailing(byte[] frame) {
        return Arrays.copyOf(frame, frame.length + 1);
    }

    private static void refusedAsTrailing(Executable decode) {
        MpProtocolException e = assertThrows(MpProtocolException.class, decode);
        assertTrue(e.getMessage().contains("1 bytes after the value"), e.getMessage());
    }

    /** A context of one slot, with an unknown field first in the slot and last in the context. */
    private static MpWriter context(MpWriter w) {
        w.mapHeader(3).key("slots").arrayHeader(1).mapHeader(5).key("newer").string("abc")
                .key("offset").integer(1).key("length").integer(2).key("shape").arrayHeader(2).integer(3).integer(4)
                .key("dtype").string("bf16");
        return w.key("chunk_indices").arrayHeader(1).integer(3).key("newer").arrayHeader(2).integer(1).binary(new byte[] {7});
    }

    @Test
    void transferResponsesSkipUnknownFieldsAndRefuseTrailingBytes() throws Exception {
        TransferContext expected = new TransferContext(Optional.of(List.of(SLOT)), Optional.of(List.of(3)));
        MpWriter store = new MpWriter().mapHeader(2).key("newer").mapHeader(1).key("x").string("y").key("context");
        assertEquals(new PrepareStoreResponse(expected), MpTransferCodec.decodeStore(context(store).toByteArray()));
        MpWriter retrieve = new MpWriter().mapHeader(4).key("newer").string("x").key("success").bool(true)
                .key("data").binary(new byte[0]).key("context");
        assertEquals(new PrepareRetrieveResponse(true, expected), MpTransferCodec.decodeRetrieve(context(retrieve).toByteArray()));

        byte[] storeFrame = MpTransferCodec.encode(new PrepareStoreResponse(TransferContext.store(List.of(SLOT), List.of(0))));
        refusedAsTrailing(() -> MpTransferCodec.decodeStore(trailing(storeFrame)));
        byte[] retrieveFrame = MpTransferCodec.encode(new PrepareRetrieveResponse(true, TransferContext.retrieve(List.of(SLOT))));
        refusedAsTrailing(() -> MpTransferCodec.decodeRetrieve(trailing(retrieveFrame)));
    }

    @Test
    void aRegistrationResponseSkipsUnknownFieldsAndRefusesTrailingBytes() throws Exception {
        byte[] frame = new MpWriter().mapHeader(3).key("newer").arrayHeader(2).integer(1).string("x")
                .key("shm_name").string("pool").key("pool_size").integer(10).toByteArray();
        assertEquals(RegisterEngineDrivenContextResponse.accepted("pool", 10), MpRegistrationCodec.decodeResponse(frame));
        byte[] accepted = MpRegistrationCodec.encodeResponse(RegisterEngineDrivenContextResponse.accepted("pool", 10));
        refusedAsTrailing(() -> MpRegistrationCodec.decodeResponse(trailing(accepted)));
    }

    @Test
    void aPayloadNamesTheMultiGroupFieldsThatHoldSomethingAndSkipsUnknownOnes() throws Exception {
        MpWriter w = new MpWriter().mapHeader(16).key("newer").mapHeader(1).key("k").arrayHeader(1).string("v");
        w.key("instance_id").integer(7).key("model_name").string("m").key("world_size").integer(2)
                .key("block_size").integer(16).key("num_layers").integer(2).key("hidden_dim_size").integer(64)
                .key("dtype_str").string("bfloat16").key("use_mla").bool(false);
        w.key("group_layouts").arrayHeader(1).arrayHeader(1).integer(1); // used: an array holding something
        w.key("engine_group_infos").mapHeader(0); // an empty map: unused
        w.key("group_hidden_dim_sizes").mapHeader(1).key("a").integer(1); // used
        w.key("group_layout_descs").string("x"); // another type: used
        w.key("enable_l1_kvweave_quant").bool(false); // unused
        w.key("object_group_layout_shapes").nil(); // unused
        w.key("transfer_metadata_wire").bool(true); // used
        RegisterEngineDrivenContextPayload p = MpRegistrationCodec.decodePayload(w.toByteArray());
        assertEquals(7, p.instanceId());
        assertEquals(64, p.hiddenDimSize());
        assertEquals(List.of("group_layouts", "group_hidden_dim_sizes", "group_layout_descs", "transfer_metadata_wire"),
                p.multiGroupFields());

        byte[] base = MpRegistrationCodec.encodePayload(RegisterEngineDrivenContextPayload.singleGroup(7, "m", 2, 16, 2, 64,
                "bfloat16", false), MpSchema.BASE);
        refusedAsTrailing(() -> MpRegistrationCodec.decodePayload(trailing(base)));
    }
}
