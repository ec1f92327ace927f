package lmcache4j.server.lm;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.util.Optional;

/**
 * An lm:// server in a process of its own, for tests that must lower its limits (file descriptors):
 * {@code LmServerProcessMain <maxConnections>} prints {@code port N}, then answers each {@code stats}
 * line on stdin with a {@code stats ...} line, and exits at end of input.
 */
public final class LmServerProcessMain {
    private LmServerProcessMain() {
    }

    public static void main(String[] args) throws Exception {
        LmServerLimits limits = LmServerLimits.defaults().withMaxConnections(Integer.parseInt(args[0]));
        try (LmCacheServer server = LmCacheServer.start(InetAddress.getLoopbackAddress(), 0, 4L << 20, Optional.empty(),
                1 << 20, limits);
             BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            System.out.println("port " + server.port() + " fds " + LmServerLimits.openFileLimit());
            System.out.flush();
            String line;
            while ((line = in.readLine()) != null) {
                if (line.equals("stats")) {
                    LmCacheServer.Stats s = server.stats();
                    System.out.println("stats open=" + s.openConnections() + " acceptErrors=" + s.acceptErrors()
                            + " connections=" + s.connections() + " running=" + server.isRunning());
                    System.out.flush();
                }
            }
        }
    }
}
