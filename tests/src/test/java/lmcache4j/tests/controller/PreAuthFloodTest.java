package lmcache4j.tests.controller;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

import lmcache4j.engine.controller.message.ControllerCodec;
import lmcache4j.engine.controller.message.WorkerReqMsg;
import lmcache4j.engine.security.DeploymentSecret;
import lmcache4j.engine.zmq.OwnedZContext;

/**
 * Issue 39's first attack, against a secured controller process (started as {@code ./lmcache4j
 * controller} runs it): strangers without the secret open many connections from one address, each
 * sending a ZMTP greeting for CURVE and the header of a 65,535-byte command that never comes. The
 * controller holds at most what its settings allow (its heap, after a full collection, grows by at
 * most the receive budget plus the allowed handshaking connections at 12 KiB each), refuses the
 * rest at once, closes the greeted ones at the handshake timeout, and registers a member meanwhile.
 *
 * <p>Scaled for CI: {@value #CONNECTIONS} connections, a 6 MiB receive budget, 64 connections per
 * address (whose partial messages, 4 MiB, leave the member room in the budget). {@code -Dlmcache4j.preauth.connections=16000 -Dlmcache4j.preauth.defaults=true} runs the
 * issue's full size against the controller's default limits.
 */
@Timeout(600)
class PreAuthFloodTest {
    private static final int CONNECTIONS = Integer.getInteger("lmcache4j.preauth.connections", 600);
    private static final boolean DEFAULTS = Boolean.getBoolean("lmcache4j.preauth.defaults");
    private static final int DECLARED = 65_535;
    /** A stranger's address: another loopback address, so that the limit per address is the stranger's own. */
    private static final String STRANGER = "127.0.0.2";
    private static final long MIB = 1L << 20;
    /** Heap measurements of an idle JVM after a full collection move by less than this. */
    private static final long SLACK = 2 * MIB;

    @TempDir
    Path tmp;

    @Test
    void strangersHoldWhatTheSettingsAllowAndAMemberRegistersMeanwhile() throws Exception {
        Path file = tmp.resolve("secret");
        DeploymentSecret secret = DeploymentSecret.createFile(file);
        ControllerProcess.Ports ports = ControllerProcess.Ports.free();
        List<String> limits = DEFAULTS ? List.of("--handshake-timeout", "20")
                : List.of("--max-frame-mb", "2", "--max-queued-orchestrations", "1", "--max-connections", "512",
                        "--max-connections-per-host", "64", "--max-handshaking", "128", "--handshake-timeout", "10");
        List<String> extra = new ArrayList<>(List.of("--secret-file", file.toString()));
        extra.addAll(limits);
        // What the settings allow a stranger: (queued + 2) x frame of partial messages, and its connections.
        long budget = DEFAULTS ? 6 * 64 * MIB : 6 * MIB;
        int strangersConnections = DEFAULTS ? 256 : 64; // --max-handshaking (defaults), --max-connections-per-host here
        long bound = budget + strangersConnections * 12 * 1024L;
        try (ControllerProcess controller = ControllerProcess.start("preauth-controller", ports, 256, Duration.ofSeconds(30),
                tmp, extra.toArray(String[]::new))) {
            long pid = controller.process().pid();
            long before = heapUsedAfterGc(pid);
            long rssBefore = rss(pid);
            List<Socket> strangers = new ArrayList<>();
            try (ZContext member = new OwnedZContext("test-preauth-member", 1)) {
                // Greetings first, so that the connections pile up against the limits, then the declared commands.
                int[] targets = {ports.pull(), ports.reply(), ports.heartbeat()};
                for (int i = 0; i < CONNECTIONS; i++) {
                    strangers.add(greet(targets[i % 3]));
                }
                ControllerHttp http = controller.http();
                // A full-size flood takes longer to open than the handshake timeout: the first ones are closed meanwhile.
                await(() -> refusedConnections(http.metrics()) + http.metric("lmcache4j_controller_connections_handshaking")
                        + http.metric("lmcache4j_controller_handshake_timeouts_total") >= CONNECTIONS,
                        "every stranger held, refused or timed out");
                double handshaking = http.metric("lmcache4j_controller_connections_handshaking");
                double refused = refusedConnections(http.metrics());
                double timedOut = http.metric("lmcache4j_controller_handshake_timeouts_total");
                for (Socket s : strangers) {
                    declare(s);
                }
                Thread.sleep(500); // the headers reach the decoders
                long during = heapUsedAfterGc(pid);
                long rssDuring = rss(pid);
                double budgetRefusals = http.metric("lmcache4j_controller_receive_budget_refused_total");
                System.out.printf("pre-auth flood: %d connections from %s; heap after GC %.1f -> %.1f MiB (+%.1f, bound"
                        + " %.1f MiB); RSS %.1f -> %.1f MiB; handshaking %.0f, refused at accept %.0f, timed out while"
                        + " the flood opened %.0f, partial messages refused by the budget %.0f%n", CONNECTIONS, STRANGER,
                        before / (double) MIB, during / (double) MIB, (during - before) / (double) MIB, bound / (double) MIB,
                        rssBefore / (double) MIB, rssDuring / (double) MIB, handshaking, refused, timedOut, budgetRefusals);
                assertTrue(handshaking <= strangersConnections, "handshaking " + handshaking);
                assertTrue(refused + timedOut >= CONNECTIONS - strangersConnections, "refused at accept: " + refused
                        + ", timed out: " + timedOut);
                assertTrue(during - before <= bound + SLACK, "the controller's heap grew by " + (during - before) / MIB
                        + " MiB under the flood; the settings allow " + bound / MIB + " MiB");

                ZMQ.Socket dealer = member.createSocket(SocketType.DEALER);
                secret.connectAsMember(dealer);
                dealer.setLinger(0);
                dealer.setReceiveTimeOut(10_000);
                dealer.connect("tcp://127.0.0.1:" + ports.reply());
                dealer.sendMore(new byte[0]);
                dealer.send(ControllerCodec.encode(new WorkerReqMsg.RegisterMsg("member", 0, "127.0.0.1", 1,
                        Optional.empty())), 0);
                assertNotNull(dealer.recv(), "the member's registration was answered during the flood");

                await(() -> http.metric("lmcache4j_controller_connections_handshaking") == 0, "no stranger left");
                long open = strangers.stream().filter(s -> !closedByServer(s)).count();
                assertEquals(0, open, "greeted strangers still connected after the handshake timeout");
                assertTrue(http.metric("lmcache4j_controller_handshake_timeouts_total") > 0, http.metrics());
            } finally {
                for (Socket s : strangers) {
                    s.close();
                }
            }
        }
    }

    /** Connects from {@value #STRANGER} and greets as a ZMTP 3.0 CURVE client. */
    private static Socket greet(int port) throws IOException {
        Socket s = new Socket();
        s.bind(new InetSocketAddress(InetAddress.getByName(STRANGER), 0));
        s.connect(new InetSocketAddress("127.0.0.1", port), 5_000);
        s.setSoTimeout(50);
        ByteBuffer greeting = ByteBuffer.allocate(64);
        greeting.put((byte) 0xff).put(new byte[8]).put((byte) 0x7f).put((byte) 3).put((byte) 0)
                .put("CURVE".getBytes(StandardCharsets.US_ASCII)).put(new byte[15]).put((byte) 0).put(new byte[31]);
        write(s, greeting.array());
        return s;
    }

    /** Sends the header of a {@value #DECLARED}-byte command (COMMAND | LARGE, 8-byte size) that never comes. */
    private static void declare(Socket s) {
        write(s, ByteBuffer.allocate(9).put((byte) 0x06).putLong(DECLARED).array());
    }

    private static void write(Socket s, byte[] bytes) {
        try {
            s.getOutputStream().write(bytes);
        } catch (IOException refused) {
            // the controller closed it: the stream is at its end, which the checks see
        }
    }

    private static boolean closedByServer(Socket s) {
        try {
            InputStream in = s.getInputStream();
            byte[] sink = new byte[4096];
            while (true) {
                if (in.read(sink) < 0) {
                    return true;
                }
            }
        } catch (SocketTimeoutException e) {
            return false;
        } catch (IOException e) {
            return true;
        }
    }

    private static double refusedConnections(String metrics) {
        double sum = 0;
        for (String line : metrics.lines().toList()) {
            if (line.startsWith("lmcache4j_controller_connections_refused_total")) {
                sum += Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
            }
        }
        return sum;
    }

    /** The process's heap in use after a full collection ({@code jcmd GC.run}, then {@code GC.heap_info}). */
    private static long heapUsedAfterGc(long pid) throws IOException, InterruptedException {
        Path jcmd = Path.of(System.getProperty("java.home"), "bin", "jcmd");
        for (int i = 0; i < 2; i++) {
            run(jcmd.toString(), Long.toString(pid), "GC.run");
        }
        String info = run(jcmd.toString(), Long.toString(pid), "GC.heap_info");
        Matcher m = Pattern.compile("used (\\d+)K").matcher(info);
        assertTrue(m.find(), info);
        return Long.parseLong(m.group(1)) * 1024;
    }

    private static long rss(long pid) throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc", Long.toString(pid), "status"))) {
            if (line.startsWith("VmRSS:")) {
                return Long.parseLong(line.replaceAll("\\D", "")) * 1024;
            }
        }
        return -1;
    }

    private static String run(String... command) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, p.waitFor(), String.join(" ", command) + ": " + out);
        return out;
    }

    private interface Check {
        boolean holds() throws Exception;
    }

    private static void await(Check check, String what) throws Exception {
        long deadline = System.nanoTime() + 30_000_000_000L;
        while (!check.holds()) {
            if (System.nanoTime() - deadline > 0) {
                throw new AssertionError("not within 30 s: " + what);
            }
            Thread.sleep(50);
        }
    }
}
