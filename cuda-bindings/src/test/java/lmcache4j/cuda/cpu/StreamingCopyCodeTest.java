package lmcache4j.cuda.cpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The machine code agrees with its own listing, before anything runs it: in
 * {@code StreamingCopyCode.java} every line's bytes fill exactly the gap to the next line's
 * offset (a byte dropped or added would shift every instruction after it), the bytes in the source
 * are the bytes the routine returns, each branch's encoded displacement lands on the instruction its
 * comment names and on an instruction boundary, and the routine ends in {@code ret}.
 */
class StreamingCopyCodeTest {
    private static final Path SOURCE = Path.of("src/main/java/lmcache4j/cuda/cpu/StreamingCopyCode.java");
    private static final Pattern LINE = Pattern.compile("^\\s*((?:\\(byte\\) )?0x[0-9a-f]{2},(?:\\s*(?:\\(byte\\) )?0x[0-9a-f]{2},)*)\\s*//\\s*([0-9a-f]+): (.*)$");
    private static final Pattern BYTE = Pattern.compile("0x([0-9a-f]{2})");
    private static final Pattern BRANCH = Pattern.compile("\\b(j\\w+) 0x([0-9a-f]+)");

    private record Instruction(int offset, byte[] bytes, String text) {
    }

    private static List<Instruction> listing(String routine) throws IOException {
        String source = Files.readString(SOURCE);
        int start = source.indexOf("static byte[] " + routine + "()");
        assertTrue(start >= 0, routine + " is not in " + SOURCE);
        String body = source.substring(start, source.indexOf("};", start));
        List<Instruction> out = new ArrayList<>();
        for (String line : body.split("\n")) {
            Matcher m = LINE.matcher(line);
            if (!m.matches()) {
                continue;
            }
            ByteArrayOutputStream bytes = new ByteArrayOutputStream();
            Matcher b = BYTE.matcher(m.group(1));
            while (b.find()) {
                bytes.write(Integer.parseInt(b.group(1), 16));
            }
            out.add(new Instruction(Integer.parseInt(m.group(2), 16), bytes.toByteArray(), m.group(3)));
        }
        return out;
    }

    @ParameterizedTest
    @ValueSource(strings = {"sse2", "avx2"})
    void theBytesMatchTheirListing(String routine) throws IOException {
        List<Instruction> listing = listing(routine);
        assertTrue(listing.size() > 20, routine + ": " + listing.size() + " instructions read");
        ByteArrayOutputStream all = new ByteArrayOutputStream();
        Set<Integer> boundaries = new TreeSet<>();
        for (int i = 0; i < listing.size(); i++) {
            Instruction in = listing.get(i);
            assertEquals(all.size(), in.offset(), routine + ": the instruction at 0x" + Integer.toHexString(in.offset())
                    + " (" + in.text() + ") does not follow the bytes before it");
            boundaries.add(in.offset());
            all.writeBytes(in.bytes());
        }
        byte[] code = routine.equals("avx2") ? StreamingCopyCode.avx2() : StreamingCopyCode.sse2();
        assertArrayEquals(all.toByteArray(), code, routine + ": the source's bytes and the routine's differ");
        assertEquals((byte) 0xc3, code[code.length - 1], routine + " ends in ret");

        int branches = 0;
        for (Instruction in : listing) {
            Matcher m = BRANCH.matcher(in.text());
            if (!m.find()) {
                continue;
            }
            byte[] b = in.bytes();
            long displacement;
            if (b.length == 2 && (b[0] & 0xf0) == 0x70) {
                displacement = b[1]; // jcc rel8
            } else if (b.length == 6 && b[0] == 0x0f && (b[1] & 0xf0) == 0x80) {
                displacement = (b[2] & 0xff) | (b[3] & 0xff) << 8 | (b[4] & 0xff) << 16 | (long) b[5] << 24; // jcc rel32
            } else {
                throw new AssertionError(routine + ": a branch encoding this test does not know: " + in.text());
            }
            long target = in.offset() + b.length + displacement;
            assertEquals(Long.parseLong(m.group(2), 16), target, routine + ": " + in.text() + " jumps elsewhere");
            assertTrue(boundaries.contains((int) target), routine + ": " + in.text() + " lands inside an instruction");
            branches++;
        }
        assertEquals(5, branches, routine + ": je done, je step twice, jne step, jne run");
    }
}
