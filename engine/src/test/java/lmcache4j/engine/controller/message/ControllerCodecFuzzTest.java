package lmcache4j.engine.controller.message;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

import org.junit.jupiter.api.Test;

/**
 * Random, truncated and mutated frames (seeded from LMCache's golden encodings) never make the
 * decoder throw anything but its two exceptions, and whatever it accepts encodes again. CI runs
 * 10^5 frames; {@code -Dlmcache4j.fuzz.controller=N} runs N.
 */
class ControllerCodecFuzzTest {
    private static final HexFormat HEX = HexFormat.of();

    @Test
    void mangledFramesOnlyEverFailWithTheCodecsExceptions() throws Exception {
        long frames = Long.getLong("lmcache4j.fuzz.controller", 100_000);
        long seed = Long.getLong("lmcache4j.fuzz.seed", System.nanoTime());
        SplittableRandom random = new SplittableRandom(seed);
        List<byte[]> seeds = new ArrayList<>();
        for (Map<String, Object> v : GoldenControllerMessagesTest.vectors()) {
            seeds.add(HEX.parseHex((String) v.get("hex")));
        }
        long decoded = 0;
        long malformed = 0;
        long unknown = 0;
        for (long i = 0; i < frames; i++) {
            byte[] frame = mangle(seeds.get(random.nextInt(seeds.size())), random);
            try {
                ControllerMessage m = ControllerCodec.decode(frame);
                ControllerCodec.encode(m);
                decoded++;
            } catch (UnknownMessageTypeException e) {
                unknown++;
            } catch (MalformedMessageException e) {
                malformed++;
            } catch (Throwable t) {
                fail("seed " + seed + ", frame " + HEX.formatHex(frame) + " threw " + t, t);
            }
        }
        System.out.printf("controller codec fuzz: %d frames (seed %d): %d decoded, %d malformed, %d unknown type%n",
                frames, seed, decoded, malformed, unknown);
        assertTrue(malformed > 0 && decoded > 0, "the mutations reach both outcomes");
    }

    /** {@code seed} truncated, flipped, given a huge length header, grown by junk, replaced by noise, or left alone. */
    static byte[] mangle(byte[] seed, SplittableRandom r) {
        byte[] f = seed.clone();
        switch (r.nextInt(6)) {
            case 0 -> f = Arrays.copyOf(f, r.nextInt(f.length + 1)); // truncated
            case 1 -> { // a few bytes flipped
                for (int n = 1 + r.nextInt(4); n > 0; n--) {
                    f[r.nextInt(f.length)] = (byte) r.nextInt(256);
                }
            }
            case 2 -> { // a byte set to a msgpack header with a huge length
                int[] headers = {0xdc, 0xdd, 0xde, 0xdf, 0xd9, 0xda, 0xdb, 0xc4, 0xc5, 0xc6, 0xcf, 0xd3, 0xc1};
                f[r.nextInt(f.length)] = (byte) headers[r.nextInt(headers.length)];
            }
            case 3 -> { // random bytes inserted
                int at = r.nextInt(f.length + 1);
                byte[] junk = new byte[1 + r.nextInt(8)];
                r.nextBytes(junk);
                byte[] g = new byte[f.length + junk.length];
                System.arraycopy(f, 0, g, 0, at);
                System.arraycopy(junk, 0, g, at, junk.length);
                System.arraycopy(f, at, g, at + junk.length, f.length - at);
                f = g;
            }
            case 4 -> { // pure noise
                f = new byte[r.nextInt(64)];
                r.nextBytes(f);
            }
            default -> { // untouched: the seeds must still decode
            }
        }
        return f;
    }
}
