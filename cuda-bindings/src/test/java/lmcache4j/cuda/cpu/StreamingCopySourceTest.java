package lmcache4j.cuda.cpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.File;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import lmcache4j.cuda.TestPrerequisites;

/**
 * The machine code is what the system's GNU {@code as} makes of its source: each
 * {@code src/main/asm/streaming-copy-<isa>.s} is reassembled and the bytes of its {@code .text}
 * compared with {@link StreamingCopyCode}, so the bytes can be read, reviewed and changed as
 * assembly. On a mismatch the message gives the lines the byte array should have (disassembled by
 * {@code objdump} where it is present). Without {@code as} (Debian package binutils) the test skips
 * on a developer's machine and fails in CI.
 */
class StreamingCopySourceTest {
    private static final Path ASM = Path.of("src/main/asm");
    /** {@code endbr64}: where CET's indirect-branch tracking is enforced, the only valid target of an indirect call. */
    private static final byte[] ENDBR64 = {(byte) 0xf3, 0x0f, 0x1e, (byte) 0xfa};

    private static Path source(StreamingCopy.Isa isa) {
        return ASM.resolve("streaming-copy-" + isa.label() + ".s");
    }

    @ParameterizedTest
    @EnumSource(StreamingCopy.Isa.class)
    void theBytesAreWhatTheAssemblerMakesOfTheSource(StreamingCopy.Isa isa, @TempDir Path tmp) throws Exception {
        TestPrerequisites.require(onPath("as"), "GNU as (Debian package binutils) on PATH, to reassemble " + source(isa));
        Path object = tmp.resolve(isa.label() + ".o");
        run(List.of("as", "--64", "-o", object.toString(), source(isa).toString()));
        Map<String, byte[]> sections = sections(Files.readAllBytes(object));
        assertFalse(sections.containsKey(".rela.text"), source(isa) + " needs relocations, but the routine is copied to "
                + "a page at any address: only local labels");
        byte[] assembled = sections.get(".text");
        if (!Arrays.equals(assembled, isa.code())) {
            fail("StreamingCopyCode." + isa.label() + "() is not what `as` makes of " + source(isa) + " (first difference at "
                    + "byte " + Arrays.mismatch(assembled, isa.code()) + "). The lines it should have:\n"
                    + (onPath("objdump") ? javaLines(object) : HexFormat.ofDelimiter(", ").withPrefix("0x").formatHex(assembled)));
        }
    }

    @ParameterizedTest
    @EnumSource(StreamingCopy.Isa.class)
    void theRoutineStartsWithEndbr64(StreamingCopy.Isa isa) {
        assertArrayEquals(ENDBR64, Arrays.copyOf(isa.code(), ENDBR64.length), isa.label());
    }

    private static boolean onPath(String program) {
        String path = System.getenv("PATH");
        return path != null && Arrays.stream(path.split(File.pathSeparator))
                .anyMatch(dir -> !dir.isEmpty() && Files.isExecutable(Path.of(dir, program)));
    }

    /** Runs {@code command}; returns its standard output, failing the test on a non-zero exit. */
    private static String run(List<String> command) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(60, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            fail(command + " did not finish in 60 s");
        }
        assertEquals(0, p.exitValue(), command + " failed:\n" + output);
        return output;
    }

    /** The sections of a 64-bit little-endian ELF object, by name. */
    static Map<String, byte[]> sections(byte[] elf) {
        ByteBuffer b = ByteBuffer.wrap(elf).order(ByteOrder.LITTLE_ENDIAN);
        assertEquals(0x464c457f, b.getInt(0), "an ELF file");
        assertEquals(2, elf[4], "64-bit ELF");
        long headers = b.getLong(0x28);
        int headerSize = Short.toUnsignedInt(b.getShort(0x3a));
        int count = Short.toUnsignedInt(b.getShort(0x3c));
        int namesIndex = Short.toUnsignedInt(b.getShort(0x3e));
        int namesAt = (int) b.getLong((int) (headers + (long) namesIndex * headerSize) + 0x18);
        Map<String, byte[]> sections = new TreeMap<>();
        for (int i = 0; i < count; i++) {
            int h = (int) (headers + (long) i * headerSize);
            int nameAt = namesAt + b.getInt(h);
            int end = nameAt;
            while (elf[end] != 0) {
                end++;
            }
            int offset = (int) b.getLong(h + 0x18);
            int size = (int) b.getLong(h + 0x20);
            boolean noBits = b.getInt(h + 4) == 8; // SHT_NOBITS (.bss) has no bytes in the file
            sections.put(new String(elf, nameAt, end - nameAt, StandardCharsets.US_ASCII),
                    noBits ? new byte[0] : Arrays.copyOfRange(elf, offset, offset + size));
        }
        return sections;
    }

    private static final Pattern LABEL = Pattern.compile("^[0-9a-f]+ <(\\w+)>:$");
    private static final Pattern INSTRUCTION = Pattern.compile("^\\s*([0-9a-f]+):\\t((?:[0-9a-f]{2} )+)\\s*\\t(.*)$");
    private static final Pattern BRANCH = Pattern.compile("^(j\\w+) ([0-9a-f]+) <(\\w+)>$");

    /**
     * The byte array's lines for {@code object} as {@code StreamingCopyCode} writes them and
     * {@code StreamingCopyCodeTest} reads them: the bytes, then offset, label and instruction.
     */
    private static String javaLines(Path object) throws IOException, InterruptedException {
        List<String> lines = new ArrayList<>();
        String label = "";
        for (String line : run(List.of("objdump", "-d", "-M", "intel", "-w", object.toString())).split("\n")) {
            Matcher l = LABEL.matcher(line);
            if (l.matches()) {
                label = l.group(1).contains("-") ? "" : l.group(1) + ": ";
                continue;
            }
            Matcher m = INSTRUCTION.matcher(line);
            if (!m.matches()) {
                continue;
            }
            StringBuilder bytes = new StringBuilder();
            for (String hex : m.group(2).trim().split(" ")) {
                bytes.append(Integer.parseInt(hex, 16) >= 0x80 ? "(byte) 0x" : "0x").append(hex).append(", ");
            }
            String text = m.group(3).trim().replaceAll("\\s+", " ").replaceAll("(BYTE|WORD|DWORD|QWORD|XMMWORD|YMMWORD) PTR ", "")
                    .replace(",", ", ");
            Matcher branch = BRANCH.matcher(text);
            if (branch.matches()) {
                text = branch.group(1) + " 0x" + branch.group(2) + " (" + branch.group(3) + ")";
            }
            lines.add(String.format("            %-72s// %2s: %s%s", bytes.toString().stripTrailing(), m.group(1), label, text));
            label = "";
        }
        return String.join("\n", lines);
    }
}
