package lmcache4j.engine.remote.lm;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.spec.AlgorithmParameterSpec;
import java.util.Arrays;
import java.util.Locale;
import java.util.Set;
import java.util.stream.Stream;

import javax.crypto.Cipher;
import javax.crypto.spec.GCMParameterSpec;
import javax.crypto.spec.IvParameterSpec;
import javax.crypto.spec.SecretKeySpec;

import com.sun.management.HotSpotDiagnosticMXBean;

/**
 * The tags of one direction of an {@link LmSession}: message {@code i} is tagged under the session
 * key and the nonce {@code direction ‖ 0 0 0 ‖ i} (big-endian) with an AEAD, one of two the
 * handshake chooses ({@link Algorithm}): ChaCha20-Poly1305 (RFC 8439) given everything tagged as
 * associated data and nothing to encrypt, a Poly1305 MAC whose one-time key never repeats; or
 * AES-256-GCM (NIST SP 800-38D) given everything tagged to encrypt, of which only the tag is sent
 * (the receiver encrypts what it received alike and compares; its ciphertext and tag never leave
 * it). Both sides count the messages of each direction, so the message number is never sent.
 *
 * <p>Off-heap payloads are fed through a small heap buffer: the JDK's intrinsics work on arrays,
 * and a direct buffer handed to the cipher takes a much slower path (Poly1305, JDK 25 on the 2-vCPU
 * AMD EPYC VM, 512 KiB messages: a heap array 10–13 GB/s, the same bytes off-heap through this
 * buffer 8–12 GB/s, a direct buffer handed to {@code updateAAD} 0.4–0.75 GB/s). {@code ./lmcache4j
 * bench p2p} reports the rate of this path ({@code tag_gbps}).
 *
 * <p>Confined to the connection's current operation: not thread-safe.
 */
public final class PayloadTag {
    /** A tag's size. */
    public static final int BYTES = 16;
    private static final int SCRATCH_BYTES = 64 * 1024;

    /**
     * The system property that overrides {@link Algorithm#preferred()} for this process:
     * {@code poly1305} or {@code aes-gcm}.
     */
    public static final String PREFERENCE_PROPERTY = "lmcache4j.payload_tag";

    /**
     * A tag's algorithm. The JDK computes Poly1305 with a vector intrinsic on x86-64 CPUs with
     * AVX-512 IFMA and on AArch64 (10–13 GB/s on the 2-vCPU Xeon, {@code bench p2p}'s
     * {@code tag_gbps}); elsewhere (x86-64 without IFMA: Skylake and Cascade Lake servers, AMD
     * before Zen 4) in plain Java at about 0.5 GB/s, where AES-GCM, which the JDK computes with
     * AES-NI and carry-less multiplication on every x86-64 CPU it runs on, is some five times faster.
     */
    public enum Algorithm {
        /** ChaCha20-Poly1305 with everything as associated data. */
        POLY1305(1, "ChaCha20-Poly1305", "ChaCha20"),
        /**
         * AES-256-GCM's tag of everything encrypted, the ciphertext thrown away: the tag of GCM's
         * authenticated encryption of the bytes, both ends encrypting them alike.
         */
        AES_GCM(2, "AES/GCM/NoPadding", "AES");

        private final int code;
        private final String transformation;
        private final String keyAlgorithm;

        Algorithm(int code, String transformation, String keyAlgorithm) {
            this.code = code;
            this.transformation = transformation;
            this.keyAlgorithm = keyAlgorithm;
        }

        /** The byte that names it in the handshake. */
        public int code() {
            return code;
        }

        /** The algorithm the handshake byte {@code code} names. */
        public static Algorithm ofCode(int code) {
            for (Algorithm a : values()) {
                if (a.code == code) {
                    return a;
                }
            }
            throw new IllegalArgumentException("no payload tag algorithm has code " + code + " (1 poly1305, 2 aes-gcm)");
        }

        /**
         * The algorithm this process computes fastest: {@link #PREFERENCE_PROPERTY} when set;
         * otherwise POLY1305 when the JVM computes it with its intrinsic, AES_GCM when it does not
         * (worked out as HotSpot decides it: AVX-512 IFMA, VL and BW with {@code UseAVX} 3 on x86-64;
         * always on AArch64).
         *
         * @throws IllegalArgumentException when the property names no algorithm
         */
        public static Algorithm preferred() {
            String forced = System.getProperty(PREFERENCE_PROPERTY);
            if (forced != null) {
                return switch (forced.strip().toLowerCase(Locale.ROOT)) {
                    case "poly1305" -> POLY1305;
                    case "aes-gcm" -> AES_GCM;
                    default -> throw new IllegalArgumentException("-D" + PREFERENCE_PROPERTY + "=" + forced
                            + " names no payload tag: poly1305 or aes-gcm");
                };
            }
            return VmPoly1305.INTRINSIC ? POLY1305 : AES_GCM;
        }

        /** Its lower-case name, as the property and the reports write it. */
        @Override
        public String toString() {
            return name().toLowerCase(Locale.ROOT).replace('_', '-');
        }
    }

    /**
     * Whether this JVM computes Poly1305 with its intrinsic, worked out once as HotSpot decides it
     * ({@code UsePoly1305Intrinsics} is a diagnostic flag, which a running JVM does not report): on
     * x86-64, AVX-512 IFMA, VL and BW in the CPU's flags ({@code /proc/cpuinfo}) with {@code UseAVX}
     * at least 3 and {@code MaxVectorSize} at least 64; on other CPUs, yes (AArch64 always has it).
     * When it cannot tell (no {@code /proc/cpuinfo}, a native image), yes.
     */
    static final class VmPoly1305 {
        static final boolean INTRINSIC = ask();

        private VmPoly1305() {
        }

        private static boolean ask() {
            String arch = System.getProperty("os.arch", "");
            if (!arch.equals("amd64") && !arch.equals("x86_64")) {
                return true;
            }
            Set<String> flags;
            try (Stream<String> lines = Files.lines(Path.of("/proc/cpuinfo"))) {
                flags = lines.filter(l -> l.startsWith("flags")).findFirst()
                        .map(l -> Set.copyOf(Arrays.asList(l.substring(l.indexOf(':') + 1).strip().split("\\s+"))))
                        .orElse(null);
            } catch (IOException | RuntimeException e) {
                return true;
            }
            if (flags == null) {
                return true;
            }
            return intrinsic(flags, vmOption("UseAVX", 3), vmOption("MaxVectorSize", 64));
        }

        /** HotSpot's condition on x86-64 (vm_version_x86.cpp), from the CPU's flags and the two VM options. */
        static boolean intrinsic(Set<String> cpuFlags, long useAvx, long maxVectorSize) {
            return cpuFlags.containsAll(Set.of("avx512ifma", "avx512vl", "avx512bw")) && useAvx >= 3
                    && maxVectorSize >= 64;
        }

        private static long vmOption(String name, long otherwise) {
            try {
                return Long.parseLong(ManagementFactory.getPlatformMXBean(HotSpotDiagnosticMXBean.class)
                        .getVMOption(name).getValue());
            } catch (RuntimeException | LinkageError e) {
                return otherwise; // a JVM without the option (a native image) or without the management beans
            }
        }
    }

    private final Algorithm algorithm;
    private final SecretKeySpec key;
    private final byte direction;
    private final Cipher cipher;
    private final byte[] scratch = new byte[SCRATCH_BYTES];
    /** AES-GCM's ciphertext, which nobody reads: only its tag is sent. */
    private final byte[] sink;
    private long sequence;

    PayloadTag(Algorithm algorithm, byte[] sessionKey, byte direction) {
        this.algorithm = algorithm;
        this.sink = algorithm == Algorithm.AES_GCM ? new byte[SCRATCH_BYTES + 2 * BYTES] : null;
        this.key = new SecretKeySpec(sessionKey, algorithm.keyAlgorithm);
        this.direction = direction;
        try {
            this.cipher = Cipher.getInstance(algorithm.transformation);
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(algorithm.transformation + " is missing from this JDK", e);
        }
    }

    /** The algorithm of these tags. */
    public Algorithm algorithm() {
        return algorithm;
    }

    /** Starts the next message of this direction; its number is used up even if it is never finished. */
    public Message next() {
        byte[] nonce = new byte[12];
        nonce[0] = direction;
        ByteBuffer.wrap(nonce).putLong(4, sequence++);
        AlgorithmParameterSpec params = algorithm == Algorithm.AES_GCM ? new GCMParameterSpec(BYTES * 8, nonce)
                : new IvParameterSpec(nonce);
        try {
            cipher.init(Cipher.ENCRYPT_MODE, key, params);
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("cannot start a " + algorithm + " tag", e);
        }
        return new Message();
    }

    /** One message being tagged: update with what it covers, then {@link #finish()}. */
    public final class Message {
        private Message() {
        }

        /** Adds the buffer's remaining bytes, consuming them. */
        public Message update(ByteBuffer bytes) {
            if (bytes.hasArray()) {
                absorb(bytes.array(), bytes.arrayOffset() + bytes.position(), bytes.remaining());
                bytes.position(bytes.limit());
                return this;
            }
            while (bytes.hasRemaining()) {
                int n = Math.min(scratch.length, bytes.remaining());
                bytes.get(scratch, 0, n);
                absorb(scratch, 0, n);
            }
            return this;
        }

        /** Adds {@code bytes}. */
        public Message update(byte[] bytes) {
            absorb(bytes, 0, bytes.length);
            return this;
        }

        /**
         * Poly1305: the bytes as associated data. AES-GCM: the bytes encrypted into {@link #sink},
         * in pieces it holds, since the JDK's GCM keeps all associated data until the tag and then
         * hashes it in one call, which its JIT never makes fast for few large messages.
         */
        private void absorb(byte[] bytes, int offset, int length) {
            if (sink == null) {
                cipher.updateAAD(bytes, offset, length);
                return;
            }
            try {
                for (int at = 0; at < length; ) {
                    int n = Math.min(SCRATCH_BYTES, length - at);
                    cipher.update(bytes, offset + at, n, sink, 0);
                    at += n;
                }
            } catch (GeneralSecurityException e) {
                throw new IllegalStateException("cannot add to an " + algorithm + " tag", e);
            }
        }

        /** The tag of everything added. */
        public byte[] finish() {
            try {
                byte[] last = cipher.doFinal(); // AES-GCM: the last partial block's ciphertext, then the tag
                return last.length == BYTES ? last : Arrays.copyOfRange(last, last.length - BYTES, last.length);
            } catch (GeneralSecurityException e) {
                throw new IllegalStateException("cannot finish a " + algorithm + " tag", e);
            }
        }

        /** Whether {@code received} is the tag of everything added (compared in constant time). */
        public boolean verify(byte[] received) {
            return LmSession.matches(finish(), received);
        }
    }
}
