package lmcache4j.engine.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;

import org.junit.jupiter.api.Test;

/**
 * Credentials in {@code extra_config} (the S3 tier's keys, the P2P token) never reach the effective
 * config the engine prints at start and {@code ./lmcache4j config} shows, nor an error about them;
 * the S3 tier's other keys and {@code storage_chunk_keys} are checked like every setting.
 */
class SecretSettingsTest {
    private static LMCacheEngineConfig config(Map<String, Object> extra) {
        return ConfigLoader.builder().environment(Map.of()).set("extra_config", extra).build();
    }

    @Test
    void credentialsAreShownAsHiddenAndNeverEchoedInAnError() {
        LMCacheEngineConfig c = config(Map.of("aws_access_key_id", "AKIDEXAMPLE42", "aws_secret_access_key", "wJalrXUtnFEMI-secret",
                "p2p_token", "a-token-of-twenty-chars", "s3_region", "eu-west-1"));
        String shown = String.join("\n", c.describe());
        assertFalse(shown.contains("AKIDEXAMPLE42") || shown.contains("wJalrXUtnFEMI") || shown.contains("a-token-of-twenty"), shown);
        assertTrue(shown.contains("extra_config.aws_secret_access_key") && shown.contains("\"<hidden>\""), shown);
        assertTrue(shown.contains("\"eu-west-1\""), "other values are shown: " + shown);
        ConfigException bad = assertThrows(ConfigException.class, () -> config(Map.of("aws_secret_access_key", 987654321L)));
        assertTrue(bad.getMessage().contains("extra_config.aws_secret_access_key = (hidden)"), bad.getMessage());
        assertFalse(bad.getMessage().contains("987654321"), bad.getMessage());
    }

    @Test
    void s3KeysAndStorageChunkKeysAreChecked() {
        assertThrows(ConfigException.class, () -> config(Map.of("s3_num_io_threads", 0L)));
        assertThrows(ConfigException.class, () -> config(Map.of("s3_part_size", -1L)));
        assertThrows(ConfigException.class, () -> config(Map.of("disable_tls", "yes")));
        assertEquals("lmcache", ConfigLoader.builder().environment(Map.of()).build().storageChunkKeys(), "LMCache's form is the default");
        assertEquals("digest", ConfigLoader.builder().environment(Map.of("LMCACHE_STORAGE_CHUNK_KEYS", "digest")).build().storageChunkKeys());
        ConfigException e = assertThrows(ConfigException.class,
                () -> ConfigLoader.builder().environment(Map.of()).set("storage_chunk_keys", "sha1").build());
        assertTrue(e.getMessage().contains("storage_chunk_keys") && e.getMessage().contains("digest"), e.getMessage());
    }
}
