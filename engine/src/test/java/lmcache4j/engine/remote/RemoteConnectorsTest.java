package lmcache4j.engine.remote;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** A remote_url that cannot name a store, or a store that cannot be opened, fails with a typed, one-line reason. */
class RemoteConnectorsTest {
    @Test
    void badUrlsAreBadRemoteUrlExceptionsThatSayWhy() {
        assertEquals("lm:// URL without a valid port: lm://127.0.0.1 (expected lm://host:port)",
                assertThrows(BadRemoteUrlException.class, () -> RemoteConnectors.create("lm://127.0.0.1")).getMessage());
        assertTrue(assertThrows(BadRemoteUrlException.class, () -> RemoteConnectors.create("ftp://x")).getMessage()
                .startsWith("remote_url scheme 'ftp://' is not served by this build of lmcache4j"));
        assertEquals("redis:// URL without a valid port: redis://host:99999",
                assertThrows(BadRemoteUrlException.class, () -> RemoteConnectors.create("redis://host:99999")).getMessage());
        assertThrows(BadRemoteUrlException.class, () -> RemoteConnectors.create(""));
        assertThrows(BadRemoteUrlException.class, () -> RemoteConnectors.create("://"));
        assertThrows(BadRemoteUrlException.class, () -> RemoteConnectors.create("fs://"));
    }

    @Test
    void theSplitLayoutNeedsARedisUrl() {
        assertEquals("extra_config.redis_layout split needs a redis://, rediss://, redis-sentinel:// or redis-cluster:// "
                + "remote_url, not lm://", assertThrows(BadRemoteUrlException.class, () -> RemoteConnectors.create(
                        "lm://127.0.0.1:1", lmcache4j.engine.remote.redis.RedisLayout.split(4, 4))).getMessage());
    }

    @Test
    void aSyntaxErrorNamesThePositionNotTheUrlWithItsPassword() {
        String message = assertThrows(BadRemoteUrlException.class,
                () -> RemoteConnectors.create("redis://user:hunter2@[::1:6379")).getMessage();
        assertTrue(message.startsWith("remote_url is not a valid URL: "), message);
        assertFalse(message.contains("hunter2"), message);
    }

    @Test
    void aStoreThatCannotBeOpenedIsRemoteUnavailable() {
        RemoteUnavailableException e = assertThrows(RemoteUnavailableException.class,
                () -> RemoteConnectors.create("fs:///proc/lmcache4j-cannot-exist/shared"));
        assertTrue(e.getMessage().startsWith("cannot open remote store fs:///proc/lmcache4j-cannot-exist/shared: "), e.getMessage());
    }
}
