package lmcache4j.server.controller;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.Optional;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * An embedder secures a controller with the deployment's secret file, as the engines name it in
 * {@code deployment_secret_file}: the HTTP API then answers only the bearer token that file gives,
 * and a file others may read, or none at all, stops the start with a message saying what to fix.
 */
@Timeout(60)
class ControllerSecretFileTest {
    @Test
    void theHttpApiAnswersOnlyTheBearerTokenOfTheSecretFile(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("secret");
        Files.writeString(file, "a deployment secret of 32 bytes+\n", java.nio.charset.StandardCharsets.US_ASCII);
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-------"));
        Path other = dir.resolve("other");
        Files.writeString(other, "another deployment's secret, 32+\n", java.nio.charset.StandardCharsets.US_ASCII);
        Files.setPosixFilePermissions(other, PosixFilePermissions.fromString("rw-------"));
        try (ControllerServer secured = ControllerServer.start(ControllerConfig.loopbackAnyPorts().withSecretFile(Optional.of(file)));
             ControllerServer stranger = ControllerServer.start(ControllerConfig.loopbackAnyPorts().withSecretFile(Optional.of(other)));
             ControllerServer open = ControllerServer.start(ControllerConfig.loopbackAnyPorts());
             HttpClient http = HttpClient.newHttpClient()) {
            String token = secured.httpBearerToken().orElseThrow();
            assertTrue(token.length() >= 32, "a token derived from the secret, not the secret: " + token);
            assertTrue(!token.contains("deployment secret"), "the secret itself is never the token");
            assertNotEquals(token, stranger.httpBearerToken().orElseThrow(), "another file, another token");
            assertEquals(Optional.empty(), open.httpBearerToken());

            assertEquals(401, get(http, secured, Optional.empty()));
            assertEquals(401, get(http, secured, stranger.httpBearerToken()));
            assertEquals(200, get(http, secured, Optional.of(token)));
            assertEquals(200, get(http, open, Optional.empty()), "without a secret the API takes anyone");
        }
    }

    @Test
    void aSecretFileOthersMayReadOrNoneStopsTheStartSayingWhatToDo(@TempDir Path dir) throws Exception {
        Path open = dir.resolve("readable");
        Files.writeString(open, "a deployment secret of 32 bytes+\n");
        Files.setPosixFilePermissions(open, PosixFilePermissions.fromString("rw-r--r--"));
        IllegalArgumentException readable = assertThrows(IllegalArgumentException.class,
                () -> ControllerServer.start(ControllerConfig.loopbackAnyPorts().withSecretFile(Optional.of(open))));
        assertTrue(readable.getMessage().contains(open.toString()) && readable.getMessage().contains("chmod 600"),
                readable.getMessage());

        Path missing = dir.resolve("missing");
        IllegalArgumentException absent = assertThrows(IllegalArgumentException.class,
                () -> ControllerServer.start(ControllerConfig.loopbackAnyPorts().withSecretFile(Optional.of(missing))));
        assertTrue(absent.getMessage().contains("does not exist") && absent.getMessage().contains("/dev/urandom"),
                absent.getMessage());
    }

    private static int get(HttpClient http, ControllerServer controller, Optional<String> bearer) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://" + controller.httpEndpoint() + "/instances"))
                .timeout(Duration.ofSeconds(20));
        bearer.ifPresent(t -> b.header("Authorization", "Bearer " + t));
        return http.send(b.build(), HttpResponse.BodyHandlers.ofString()).statusCode();
    }
}
