package lmcache4j.engine.storage.policy;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;

import lmcache4j.engine.key.CacheEngineKey;
import lmcache4j.engine.key.ChunkHash;
import lmcache4j.allocator.DType;
import org.junit.jupiter.api.Test;

/**
 * What the tiers rely on beyond the candidate order: each named policy answers to its name, a
 * chunk key's fingerprint is its hash's first 8 bytes mixed with its worker, layer and model (so
 * a ghost list never confuses two ranks' or two layers' copies of one chunk), and ARC's B2 side.
 */
class PolicyFactoryAndArcTest {
    private static final byte[] SIXTEEN = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};

    @Test
    void everyNamedPolicyAnswersToItsName() {
        for (String name : CachePolicies.NAMES) {
            assertEquals(name, CachePolicies.create(name.toLowerCase()).name());
            assertEquals(name, CachePolicies.forChunks(name).name());
        }
    }

    @Test
    void aChunkFingerprintIsTheHashsFirstEightBytesMixedWithWorkerLayerAndModel() {
        long model = (long) "m".hashCode() << 32;
        CacheEngineKey plain = key("m", ChunkHash.of(SIXTEEN));
        assertEquals(0x0102030405060708L ^ model, CachePolicies.fingerprint(plain));
        byte[] eight = {(byte) 0xF1, 2, 3, 4, 5, 6, 7, (byte) 0x88};
        assertEquals(0xF102030405060788L ^ model, CachePolicies.fingerprint(key("m", ChunkHash.of(eight))));
        ChunkHash shortHash = ChunkHash.of(new byte[] {9, 8, 7});
        assertEquals(shortHash.hashCode() ^ model, CachePolicies.fingerprint(key("m", shortHash)));
        assertEquals(0x0102030405060708L ^ model ^ 0x9E3779B97F4A7C15L, CachePolicies.fingerprint(plain.withWorkerId(1)));
        assertEquals(0x0102030405060708L ^ model ^ 0xC2B2AE3D27D4EB4FL, CachePolicies.fingerprint(plain.layer(0)));
        assertEquals(0x0102030405060708L ^ model ^ (2 * 0xC2B2AE3D27D4EB4FL), CachePolicies.fingerprint(plain.layer(1)));
        assertEquals(0x0102030405060708L ^ ((long) "n".hashCode() << 32),
                CachePolicies.fingerprint(key("n", ChunkHash.of(SIXTEEN))));
    }

    private static CacheEngineKey key(String model, ChunkHash hash) {
        return new CacheEngineKey(model, 2, 0, hash, DType.FLOAT16);
    }

    @Test
    void arcSendsAKeyB2RemembersToT2AndShrinksT1sTarget() {
        ArcPolicy<Integer> arc = new ArcPolicy<>(Integer::longValue);
        arc.onPut(1);
        arc.onPut(2);
        arc.onHit(1);          // T1 = 2, T2 = 1
        arc.onHit(9);          // not held: nothing moves
        assertEquals(2, arc.size());
        arc.onRemove(1);       // B2 remembers 1
        assertEquals(1, arc.size());
        arc.onRemove(2);       // B1 remembers 2
        arc.onRemove(2);       // a second removal remembers nothing more
        assertEquals(0, arc.size());
        arc.onPut(2);          // a B1 ghost hit: T2, target 1
        arc.onPut(1);          // a B2 ghost hit: T2, target back to 0
        arc.onPut(3);          // new: T1 = 3, above its target 0
        assertEquals(3, arc.size());
        assertEquals(List.of(3, 2, 1), arc.evictionCandidates(3, k -> true));
        assertEquals(List.of(2, 1), arc.evictionCandidates(3, k -> k != 3));
    }

    @Test
    void rightAfterAB2GhostHitT1GoesFirstWhenItIsExactlyAtItsTarget() {
        ArcPolicy<Integer> arc = new ArcPolicy<>(Integer::longValue);
        for (int k = 1; k <= 4; k++) {
            arc.onPut(k);
        }
        arc.onRemove(1);
        arc.onRemove(2);       // B1 = 1, 2
        arc.onHit(4);          // T1 = 3, T2 = 4
        arc.onRemove(4);       // B2 = 4
        arc.onPut(1);          // B1 ghost hits: target 1, then 2
        arc.onPut(2);
        arc.onPut(4);          // a B2 ghost hit: target 1, T1 (just 3) is at it
        assertEquals(List.of(3, 1), arc.evictionCandidates(2, k -> true));
        arc.onPut(5);          // not from B2: T1 = 3, 5 is above the target, still first
        assertEquals(List.of(3, 5, 1), arc.evictionCandidates(3, k -> true));
    }
}
