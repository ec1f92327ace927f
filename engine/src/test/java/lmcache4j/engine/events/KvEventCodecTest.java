package lmcache4j.engine.events;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HexFormat;
import java.util.List;
import java.util.OptionalLong;

import lmcache4j.engine.key.ChunkHash;
import org.junit.jupiter.api.Test;

/**
 * The codec against bytes the real msgspec (0.22.0) wrote for vLLM's event classes as
 * tests/python/kv_events_subscriber.py declares them (vllm/distributed/kv_events.py: EventBatch with
 * data_parallel_rank, BlockStored with medium, lora_name, extra_keys and group_idx, BlockRemoved with
 * medium and group_idx), for the same events. KvEventsTest decodes live batches with msgspec too.
 */
class KvEventCodecTest {
    private static final HexFormat HEX = HexFormat.of();

    @Test
    void aBatchOfEachKindIsMsgspecsBytes() {
        byte[] batch = KvEventCodec.batch(1.5, List.of(
                new KvEvent.BlockStored(new long[] {0x9f250bf2b2fa5ff1L}, OptionalLong.empty(), new int[] {1, 2}, 256, "CPU"),
                new KvEvent.BlockRemoved(new long[] {5}, "CPU"),
                new KvEvent.AllBlocksCleared()));
        assertEquals("93cb3ff8000000000000939aab426c6f636b53746f72656491cf9f250bf2b2fa5ff1c0920102cd0100c0a3435055c0c0c0"
                + "94ac426c6f636b52656d6f7665649105a3435055c091b0416c6c426c6f636b73436c6561726564c0", HEX.formatHex(batch));
    }

    @Test
    void widthsParentsAndUnsignedHashesAreMsgspecsBytes() {
        byte[] batch = KvEventCodec.batch(1764172800.125, List.of(
                new KvEvent.BlockStored(new long[] {42}, OptionalLong.of(Long.MIN_VALUE + 5),
                        new int[] {0, 127, 128, 65536, Integer.MAX_VALUE}, 16, "DISK"),
                new KvEvent.BlockRemoved(new long[] {-1L, 7}, "REMOTE")));
        assertEquals("93cb41da49c900080000929aab426c6f636b53746f726564912acf800000000000000595007fcc80ce00010000ce7fffffff10"
                + "c0a44449534bc0c0c094ac426c6f636b52656d6f76656492cfffffffffffffffff07a652454d4f5445c0c0", HEX.formatHex(batch));
    }

    @Test
    void theBlockHashIsVllmsLow64BitsAndTiersMapToMedia() {
        byte[] digest = new byte[32];
        for (int i = 0; i < digest.length; i++) {
            digest[i] = (byte) i;
        }
        assertEquals(0x18191a1b1c1d1e1fL, KvEvents.blockHash(ChunkHash.of(digest)));
        assertEquals("CPU", KvEvents.medium("LocalCPUBackend"));
        assertEquals("DISK", KvEvents.medium("LocalDiskBackend"));
        assertEquals("REMOTE", KvEvents.medium("RemoteBackend"));
        assertEquals("SomeTier", KvEvents.medium("SomeTier"));
    }

    @Test
    void vllmsEndpointRuleDecidesBindOrConnect() {
        assertTrue(KvEventPublisher.binds("tcp://*:5557"));
        assertTrue(KvEventPublisher.binds("tcp://[::]:5557"));
        assertTrue(KvEventPublisher.binds("ipc:///tmp/kv"));
        assertFalse(KvEventPublisher.binds("tcp://127.0.0.1:5557"));
    }
}
