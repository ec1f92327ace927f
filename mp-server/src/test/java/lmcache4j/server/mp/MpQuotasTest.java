package lmcache4j.server.mp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class MpQuotasTest {
    @Test
    void atMostMaxQuotasAreKeptAndAnExistingOneCanAlwaysChange() {
        MpQuotas q = new MpQuotas(null); // limits only: the store is read for usage, never here
        for (int i = 0; i < MpQuotas.MAX_QUOTAS; i++) {
            assertTrue(q.set("tenant-" + i, 1.0));
        }
        assertFalse(q.set("one-too-many", 1.0));
        assertTrue(q.set("tenant-7", 2.0), "changing a salt's limit takes no room");
        assertEquals(2.0, q.limits().get("tenant-7"));
        assertTrue(q.remove("tenant-7"));
        assertTrue(q.set("one-too-many", 1.0), "a removal makes room");
        assertEquals(MpQuotas.MAX_QUOTAS, q.limits().size());
    }

    @Test
    void saltsLmcacheRefusesAreNamed() {
        assertTrue(MpQuotas.checkSalt("").isEmpty());
        assertTrue(MpQuotas.checkSalt("tenant_a-1").isEmpty());
        assertTrue(MpQuotas.checkSalt("a/b").isPresent());
        assertTrue(MpQuotas.checkSalt("x".repeat(129)).isPresent());
    }
}
