package lmcache4j.engine.remote.redis;

import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;

/**
 * A real Redis Cluster of {@code masters} masters on loopback ports, for the tests and the remote
 * benchmark: {@code redis-server}s in cluster mode, the 16384 slots split in {@code masters} equal
 * ranges, joined with {@code CLUSTER MEET}; ready when every node reports {@code cluster_state:ok}. Each node's cluster bus gets its own free port
 * ({@code --cluster-port}) rather than port + 10000, which may be taken or out of range.
 */
public final class RedisClusterProcesses implements AutoCloseable {
    public static final int SLOTS = 16384;
    private final List<RedisServerProcess> nodes;
    private final List<Integer> busPorts;

    private RedisClusterProcesses(List<RedisServerProcess> nodes, List<Integer> busPorts) {
        this.nodes = nodes;
        this.busPorts = busPorts;
    }

    /** Starts the masters in {@code dir} (their {@code nodes.conf} files live there) and waits for the cluster. */
    public static RedisClusterProcesses start(Path dir, int masters) throws IOException, InterruptedException {
        List<RedisServerProcess> nodes = new ArrayList<>();
        List<Integer> busPorts = new ArrayList<>();
        RedisClusterProcesses cluster = new RedisClusterProcesses(nodes, busPorts);
        try {
            for (int i = 0; i < masters; i++) {
                int bus = RedisServerProcess.freePort();
                busPorts.add(bus);
                nodes.add(RedisServerProcess.start(List.of("--cluster-enabled", "yes",
                        "--cluster-config-file", dir.resolve("nodes-" + i + ".conf").toString(),
                        "--cluster-port", Integer.toString(bus), "--cluster-node-timeout", "2000",
                        "--dir", dir.toString())));
            }
            for (int i = 0; i < masters; i++) {
                int from = i * SLOTS / masters;
                int to = (i + 1) * SLOTS / masters - 1;
                expectOk(command(nodes.get(i).port(), "CLUSTER", "ADDSLOTSRANGE", Integer.toString(from), Integer.toString(to)));
            }
            for (int i = 1; i < masters; i++) {
                expectOk(command(nodes.get(0).port(), "CLUSTER", "MEET", "127.0.0.1",
                        Integer.toString(nodes.get(i).port()), Integer.toString(busPorts.get(i))));
            }
            cluster.awaitState("ok", Duration.ofSeconds(30));
            return cluster;
        } catch (IOException | InterruptedException | RuntimeException e) {
            cluster.close();
            throw e;
        }
    }

    /** The node processes, in slot order (node 0 serves the lowest slots). */
    public List<RedisServerProcess> nodes() {
        return nodes;
    }

    /** {@code redis-cluster://} with every node as a seed. */
    public String url() {
        return "redis-cluster://" + nodes.stream().map(n -> "127.0.0.1:" + n.port()).collect(Collectors.joining(","));
    }

    /** Waits until every running node reports {@code cluster_state:<state>} and knows all the others. */
    public void awaitState(String state, Duration within) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + within.toNanos();
        String last = "";
        while (System.nanoTime() < deadline) {
            boolean all = true;
            for (RedisServerProcess n : nodes) {
                try {
                    last = command(n.port(), "CLUSTER", "INFO");
                } catch (IOException e) {
                    last = e.toString();
                }
                if (!last.contains("cluster_state:" + state) || !last.contains("cluster_known_nodes:" + nodes.size())) {
                    all = false;
                    break;
                }
            }
            if (all) {
                return;
            }
            Thread.sleep(50);
        }
        throw new IllegalStateException("redis cluster did not reach cluster_state:" + state + " within " + within + ":\n" + last);
    }

    /** Sends one command to the server at {@code port} and returns its reply as text (an error reply starts with '-'). */
    public static String command(int port, String... args) throws IOException {
        try (Socket s = new Socket(InetAddress.getLoopbackAddress(), port)) {
            s.setSoTimeout(5000);
            StringBuilder req = new StringBuilder("*").append(args.length).append("\r\n");
            for (String a : args) {
                req.append('$').append(a.getBytes(StandardCharsets.UTF_8).length).append("\r\n").append(a).append("\r\n");
            }
            OutputStream out = s.getOutputStream();
            out.write(req.toString().getBytes(StandardCharsets.UTF_8));
            out.flush();
            DataInputStream in = new DataInputStream(s.getInputStream());
            String line = readLine(in);
            if (line.startsWith("$")) {
                int n = Integer.parseInt(line.substring(1));
                if (n < 0) {
                    return "";
                }
                byte[] body = in.readNBytes(n);
                return new String(body, StandardCharsets.UTF_8);
            }
            return line;
        }
    }

    private static String readLine(DataInputStream in) throws IOException {
        StringBuilder b = new StringBuilder();
        int c;
        while ((c = in.read()) != -1) {
            if (c == '\r') {
                in.read(); // '\n'
                return b.toString();
            }
            b.append((char) c);
        }
        throw new IOException("connection closed after '" + b + "'");
    }

    private static void expectOk(String reply) {
        if (!reply.equals("+OK")) {
            throw new IllegalStateException("redis cluster setup: " + reply);
        }
    }

    @Override
    public void close() {
        nodes.forEach(RedisServerProcess::close);
    }
}
