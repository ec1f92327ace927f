package lmcache4j.s3;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * An HTTP/1.1 proxy in front of a real S3 server that misbehaves on request: answers the next
 * requests with an error status, answers late, cuts a GET's body short, or flips a bit in it. Every
 * other request goes to the server unchanged (one upstream connection per request), so what the S3
 * client meets is a real server with real faults, not a stand-in.
 */
final class FaultyHttpProxy implements AutoCloseable {
    private final int upstreamPort;
    private final ServerSocket listener;
    private final Thread acceptor;
    private volatile boolean closed;

    /** Requests to answer with {@link #errorStatus} instead of forwarding. */
    final AtomicInteger failNext = new AtomicInteger();
    volatile int errorStatus = 503;
    /** Milliseconds to wait before forwarding each request. */
    volatile long delayMillis;
    /** GET bodies to cut after {@link #truncateAt} bytes (the connection is then closed). */
    final AtomicInteger truncateNextGets = new AtomicInteger();
    volatile int truncateAt = 1000;
    /** GET bodies to relay with one bit flipped in the middle. */
    final AtomicInteger flipNextGets = new AtomicInteger();
    /** Requests seen, and requests answered with an injected error. */
    final AtomicInteger requests = new AtomicInteger();
    final AtomicInteger injected = new AtomicInteger();

    FaultyHttpProxy(int upstreamPort) throws IOException {
        this.upstreamPort = upstreamPort;
        this.listener = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        this.acceptor = Thread.ofVirtual().start(this::acceptLoop);
    }

    int port() {
        return listener.getLocalPort();
    }

    String url(String bucket) {
        return "s3://127.0.0.1:" + port() + "/" + bucket + "?disable_tls=true";
    }

    private void acceptLoop() {
        while (!closed) {
            try {
                Socket client = listener.accept();
                Thread.ofVirtual().start(() -> serve(client));
            } catch (IOException e) {
                return;
            }
        }
    }

    private void serve(Socket client) {
        try (client) {
            InputStream in = client.getInputStream();
            OutputStream out = client.getOutputStream();
            while (!closed) {
                byte[] head = readHead(in);
                if (head == null) {
                    return;
                }
                String headText = new String(head, StandardCharsets.ISO_8859_1);
                if (headText.toLowerCase(Locale.ROOT).contains("\r\nexpect: 100-continue\r\n")) {
                    // The SDK waits for the go-ahead before it sends a PUT's body; the server gets the body directly.
                    out.write("HTTP/1.1 100 Continue\r\n\r\n".getBytes(StandardCharsets.ISO_8859_1));
                    out.flush();
                    headText = headText.replaceAll("(?i)\r\nexpect: 100-continue", "");
                    head = headText.getBytes(StandardCharsets.ISO_8859_1);
                }
                byte[] body = in.readNBytes((int) contentLength(headText));
                String method = headText.substring(0, headText.indexOf(' '));
                requests.incrementAndGet();
                if (failNext.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
                    injected.incrementAndGet();
                    byte[] error = ("<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>"
                            + (errorStatus == 503 ? "SlowDown" : "InternalError") + "</Code><Message>injected</Message></Error>")
                            .getBytes(StandardCharsets.UTF_8);
                    out.write(("HTTP/1.1 " + errorStatus + " Injected\r\nContent-Type: application/xml\r\nContent-Length: "
                            + (method.equals("HEAD") ? 0 : error.length) + "\r\n\r\n").getBytes(StandardCharsets.ISO_8859_1));
                    if (!method.equals("HEAD")) {
                        out.write(error);
                    }
                    out.flush();
                    continue;
                }
                if (delayMillis > 0) {
                    Thread.sleep(delayMillis);
                }
                if (!forward(head, body, method, out)) {
                    return; // a cut body: the connection ends with it
                }
            }
        } catch (IOException | InterruptedException | RuntimeException e) {
            // the client went away, or the proxy closed
        }
    }

    /** Sends one request upstream and relays its response; false when the body was cut (close the client). */
    private boolean forward(byte[] head, byte[] body, String method, OutputStream out) throws IOException {
        try (Socket up = new Socket(InetAddress.getLoopbackAddress(), upstreamPort)) {
            OutputStream upOut = up.getOutputStream();
            upOut.write(head);
            upOut.write(body);
            upOut.flush();
            InputStream upIn = up.getInputStream();
            byte[] responseHead = readHead(upIn);
            if (responseHead == null) {
                throw new IOException("upstream closed without a response");
            }
            String text = new String(responseHead, StandardCharsets.ISO_8859_1);
            boolean chunked = text.toLowerCase(Locale.ROOT).contains("transfer-encoding: chunked");
            int status = Integer.parseInt(text.substring(9, 12));
            boolean hasBody = !method.equals("HEAD") && status != 204 && status != 304;
            byte[] responseBody = !hasBody ? new byte[0] : chunked ? readChunked(upIn) : upIn.readNBytes((int) contentLength(text));
            if (chunked) { // relay it with a length: simpler than re-chunking
                text = text.replaceAll("(?i)transfer-encoding: chunked\r\n", "Content-Length: " + responseBody.length + "\r\n");
                responseHead = text.getBytes(StandardCharsets.ISO_8859_1);
            }
            boolean get = method.equals("GET") && (status == 200 || status == 206);
            if (get && truncateNextGets.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
                injected.incrementAndGet();
                out.write(responseHead);
                out.write(responseBody, 0, Math.min(truncateAt, responseBody.length));
                out.flush();
                return false;
            }
            if (get && responseBody.length > 0 && flipNextGets.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
                injected.incrementAndGet();
                responseBody[responseBody.length / 2] ^= 0x01;
            }
            out.write(responseHead);
            out.write(responseBody);
            out.flush();
            return true;
        }
    }

    private static byte[] readHead(InputStream in) throws IOException {
        ByteArrayOutputStream head = new ByteArrayOutputStream();
        int matched = 0;
        while (matched < 4) {
            int b = in.read();
            if (b < 0) {
                return null;
            }
            head.write(b);
            matched = (b == (matched % 2 == 0 ? '\r' : '\n')) ? matched + 1 : (b == '\r' ? 1 : 0);
        }
        return head.toByteArray();
    }

    private static long contentLength(String head) {
        for (String line : head.split("\r\n")) {
            int colon = line.indexOf(':');
            if (colon > 0 && line.substring(0, colon).trim().equalsIgnoreCase("content-length")) {
                return Long.parseLong(line.substring(colon + 1).trim());
            }
        }
        return 0;
    }

    private static byte[] readChunked(InputStream in) throws IOException {
        ByteArrayOutputStream body = new ByteArrayOutputStream();
        while (true) {
            StringBuilder size = new StringBuilder();
            for (int b; (b = in.read()) != '\n'; ) {
                if (b < 0) {
                    throw new IOException("chunked body cut");
                }
                if (b != '\r') {
                    size.append((char) b);
                }
            }
            int n = Integer.parseInt(size.toString().split(";")[0].trim(), 16);
            if (n == 0) {
                in.readNBytes(2);
                return body.toByteArray();
            }
            body.write(in.readNBytes(n));
            in.readNBytes(2);
        }
    }

    @Override
    public void close() throws IOException {
        closed = true;
        listener.close();
        acceptor.interrupt();
    }
}
