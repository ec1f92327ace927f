package lmcache4j.engine.remote;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import lmcache4j.allocator.DType;
import lmcache4j.allocator.MemoryFormat;
import lmcache4j.allocator.TensorShape;
import lmcache4j.engine.ModelMetadata;
import lmcache4j.engine.config.ConfigLoader;
import lmcache4j.engine.config.LMCacheEngineConfig;
import lmcache4j.engine.key.CacheKey;
import lmcache4j.engine.key.CacheKeys;

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

    private static final ModelMetadata MODEL = new ModelMetadata("m", 1, 0, DType.FLOAT16, 2, 2, 64, false);

    /**
     * The connector a config names is the one its remote_url and extra_config make: the split layout
     * read from extra_config is refused with lm://, an fs:// store opens where the URL points, and a
     * config without remote_url is an error that names the setting.
     */
    @Test
    void theConfigsRemoteIsOpenedAsTheEngineOpensIt(@TempDir Path dir) throws Exception {
        LMCacheEngineConfig split = ConfigLoader.builder().environment(Map.of()).set("remote_url", "lm://127.0.0.1:1")
                .set("extra_config", Map.of("redis_layout", "split")).build();
        assertTrue(assertThrows(BadRemoteUrlException.class, () -> RemoteConnectors.create(split, MODEL)).getMessage()
                .startsWith("extra_config.redis_layout split needs a redis://"));
        LMCacheEngineConfig fs = ConfigLoader.builder().environment(Map.of()).set("remote_url", "fs://" + dir).build();
        CacheKey key = CacheKeys.parse("m@1@0@00000000000000aa@half");
        try (RemoteConnector plain = RemoteConnectors.create("fs://" + dir); Arena arena = Arena.ofShared();
             RemoteConnector store = RemoteConnectors.create(fs, MODEL)) {
            assertFalse(store.exists(key).get(10, TimeUnit.SECONDS));
            plain.put(key, new RemoteMetadata(256, MemoryFormat.KV_2LTD, Optional.of(DType.FLOAT16), TensorShape.of(2, 2, 16, 2)),
                    arena.allocate(256)).get(10, TimeUnit.SECONDS);
            assertTrue(store.exists(key).get(10, TimeUnit.SECONDS), "the config's fs:// store is the directory its URL names");
        }
        LMCacheEngineConfig none = ConfigLoader.builder().environment(Map.of()).build();
        assertTrue(assertThrows(IllegalArgumentException.class, () -> RemoteConnectors.create(none, MODEL)).getMessage()
                .contains("remote_url"));
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
