package lmcache4j.bench.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;

import lmcache4j.bench.demo.DemoVerdict.Outcome;
import lmcache4j.engine.remote.RemoteHealth;
import org.junit.jupiter.api.Test;

/** The demo's verdict says what happened: wrong bytes, a shortfall, an engine problem, a remote that never worked. */
class DemoVerdictTest {
    private static final RemoteHealth HEALTHY = new RemoteHealth(RemoteHealth.State.HEALTHY, Duration.ofSeconds(20),
            Optional.empty(), Optional.of(Instant.EPOCH), 0, 0, 120, "");
    private static final RemoteHealth UNREACHABLE = new RemoteHealth(RemoteHealth.State.UNREACHABLE, Duration.ofMillis(12_300),
            Optional.of(Instant.EPOCH), Optional.empty(), 55, 55, 0, "connection refused");

    private static DemoReport.Remote remote(long puts, long failedPuts, long gets, RemoteHealth health) {
        return new DemoReport.Remote("lm://127.0.0.1:1", puts, puts << 20, failedPuts, 0, gets, gets << 20, 0, health);
    }

    @Test
    void aCleanRunPasses() {
        DemoVerdict v = DemoVerdict.of(1 << 30, 0, 0, 0, 0, true, remote(31, 0, 4, HEALTHY));
        assertTrue(v.passed());
        assertEquals(0, v.exitStatus());
        assertEquals(List.of(), v.reasons());
        assertEquals("PASS: all 1.0 GiB of retrieved KV matched the model byte for byte.", v.line(1 << 30));
    }

    @Test
    void aShortfallWithNoWrongByteIsNotCalledWrongKv() {
        DemoVerdict v = DemoVerdict.of(1 << 30, 0, 3, 768, 0, true, null);
        assertEquals(Outcome.SHORTFALL, v.outcome());
        assertEquals(1, v.exitStatus());
        assertEquals(List.of("3 retrieves loaded fewer tokens than their pinned lookup promised (768 tokens short in all), "
                + "though every byte they loaded matched the model"), v.reasons());
        assertFalse(v.line(1 << 30).contains("wrong KV"), v.line(1 << 30));
    }

    @Test
    void wrongBytesAreWrongKvAndComeFirst() {
        DemoVerdict v = DemoVerdict.of(4096, 17, 2, 512, 0, true, remote(0, 9, 0, UNREACHABLE));
        assertEquals(Outcome.WRONG_KV, v.outcome());
        assertEquals(1, v.exitStatus());
        assertEquals("17 of the 4,096 retrieved bytes differ from the model: the engine returned wrong KV", v.reasons().get(0));
        assertEquals("2 retrieves loaded fewer tokens than their pinned lookup promised (512 tokens short in all)",
                v.reasons().get(1));
        assertTrue(v.reasons().get(2).startsWith("the remote lm://127.0.0.1:1 was unreachable"), v.reasons().get(2));
    }

    @Test
    void aRemoteThatNeverAnsweredFailsWithItsOwnStatusAndReason() {
        DemoVerdict v = DemoVerdict.of(1 << 20, 0, 0, 0, 0, true, remote(0, 31, 0, UNREACHABLE));
        assertEquals(Outcome.REMOTE_STORED_NOTHING, v.outcome());
        assertEquals(3, v.exitStatus());
        assertEquals("FAIL: the remote lm://127.0.0.1:1 was unreachable for the whole run (connection refused): 0 of 31 puts "
                + "stored and 0 chunks read back", v.line(1 << 20));
    }

    @Test
    void aRemoteThatAnsweredButKeptNothingFailsToo() {
        RemoteHealth answeredPings = new RemoteHealth(RemoteHealth.State.DEGRADED, Duration.ofSeconds(2), Optional.of(Instant.EPOCH),
                Optional.of(Instant.EPOCH), 1, 31, 3, "no answer to an operation within 5.0 s");
        DemoVerdict v = DemoVerdict.of(1 << 20, 0, 0, 0, 0, true, remote(0, 31, 0, answeredPings));
        assertEquals(Outcome.REMOTE_STORED_NOTHING, v.outcome());
        assertEquals("the remote lm://127.0.0.1:1 stored nothing (degraded for 2.0 s (no answer to an operation within 5.0 s)): "
                + "0 of 31 puts stored and 0 chunks read back", v.reasons().getFirst());
        assertTrue(DemoVerdict.of(1 << 20, 0, 0, 0, 0, true, remote(0, 0, 7, HEALTHY)).passed(),
                "a remote that served hits (another process stored them) worked");
    }

    @Test
    void engineProblemsAreNamed() {
        DemoVerdict v = DemoVerdict.of(1 << 20, 0, 0, 0, 2, false, null);
        assertEquals(Outcome.ENGINE_PROBLEM, v.outcome());
        assertEquals(List.of("2 retrieves returned a mask with a hole (a token loaded after one that was not)",
                "the engine's health check (allocator invariants) failed: see the log"), v.reasons());
    }
}
