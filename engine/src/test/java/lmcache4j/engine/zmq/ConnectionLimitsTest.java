package lmcache4j.engine.zmq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.Map;

import lmcache4j.engine.config.ConfigLoader;
import lmcache4j.engine.config.LMCacheEngineConfig;
import org.junit.jupiter.api.Test;

/** The limits hold at their edges exactly: the last value accepted, the first refused, and the config keys' units. */
class ConnectionLimitsTest {
    private static final Duration OK = Duration.ofSeconds(1);

    @Test
    void eachCountIsAtLeastOne() {
        new ConnectionLimits(1, 1, 1, OK);
        refused(() -> new ConnectionLimits(0, 1, 1, OK), "at least 1");
        refused(() -> new ConnectionLimits(1, 0, 1, OK), "at least 1");
        refused(() -> new ConnectionLimits(1, 1, 0, OK), "at least 1");
    }

    @Test
    void perHostAndHandshakingMayEqualTheTotalButNotExceedIt() {
        new ConnectionLimits(8, 8, 8, OK);
        refused(() -> new ConnectionLimits(8, 9, 8, OK), "cannot exceed");
        refused(() -> new ConnectionLimits(8, 8, 9, OK), "cannot exceed");
    }

    @Test
    void theHandshakeTimeoutIsBetween100MillisecondsAndOneHourInclusive() {
        new ConnectionLimits(1, 1, 1, Duration.ofMillis(100));
        new ConnectionLimits(1, 1, 1, Duration.ofHours(1));
        refused(() -> new ConnectionLimits(1, 1, 1, Duration.ofMillis(99)), "between 100 ms and 1 h");
        refused(() -> new ConnectionLimits(1, 1, 1, Duration.ofHours(1).plusMillis(1)), "between 100 ms and 1 h");
    }

    @Test
    void extraConfigKeysGiveTheLimitsWithTheTimeoutInSeconds() {
        LMCacheEngineConfig config = ConfigLoader.builder().environment(Map.of())
                .setText("extra_config", "{\"zmq.max_connections\": 40, \"zmq.max_connections_per_host\": 10, "
                        + "\"zmq.max_handshaking\": 5, \"zmq.handshake_timeout\": 0.25}", "test").build();
        assertEquals(new ConnectionLimits(40, 10, 5, Duration.ofMillis(250)), ConnectionLimits.of(config));
    }

    @Test
    void aCombinationThatCannotHoldNamesTheExtraConfigKeys() {
        LMCacheEngineConfig config = ConfigLoader.builder().environment(Map.of())
                .setText("extra_config", "{\"zmq.max_connections\": 4, \"zmq.max_connections_per_host\": 10}", "test").build();
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ConnectionLimits.of(config));
        assertTrue(e.getMessage().startsWith("extra_config zmq.max_connections"), e.getMessage());
        assertTrue(e.getMessage().contains("cannot exceed"), e.getMessage());
    }

    @Test
    void withHandshakeTimeoutKeepsTheCounts() {
        ConnectionLimits limits = new ConnectionLimits(40, 10, 5, OK).withHandshakeTimeout(Duration.ofMillis(300));
        assertEquals(new ConnectionLimits(40, 10, 5, Duration.ofMillis(300)), limits);
    }

    private static void refused(Runnable build, String fragment) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, build::run);
        assertTrue(e.getMessage().contains(fragment), e.getMessage());
    }
}
