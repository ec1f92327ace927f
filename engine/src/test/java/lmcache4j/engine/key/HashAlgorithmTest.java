package lmcache4j.engine.key;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class HashAlgorithmTest {
    @Test
    void sha256CborIsTheDefaultAndTheOld64BitNameIsAnAlias() {
        assertEquals(HashAlgorithm.SHA256_CBOR, HashAlgorithm.defaultAlgorithm());
        assertEquals(HashAlgorithm.SHA256_CBOR, HashAlgorithm.fromName("sha256_cbor"));
        assertEquals(HashAlgorithm.SHA256_CBOR, HashAlgorithm.fromName("sha256_cbor_64bit"));
        assertEquals("sha256_cbor", HashAlgorithm.SHA256_CBOR.lmcacheName());
    }

    @Test
    void builtinIsRefusedWithTheWayOut() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> HashAlgorithm.fromName("builtin"));
        assertTrue(e.getMessage().contains("'builtin'") && e.getMessage().contains("Use 'sha256_cbor'")
                && e.getMessage().contains("PYTHONHASHSEED"), e.getMessage());
    }

    @Test
    void unknownNamesListTheValidOnes() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> HashAlgorithm.fromName("md5"));
        assertEquals("unknown pre_caching_hash_algorithm 'md5'; valid: sha256_cbor, "
                + "sha256_cbor_64bit (alias of sha256_cbor)", e.getMessage());
    }
}
