import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The one change lmcache4j makes to jextract's output, applied mechanically by regenerate.sh after
 * every run (so regenerating reproduces the committed sources):
 *
 * <ol>
 *   <li>every function holder in cudart_h and libc_h takes its descriptor, symbol and handle from
 *       {@code lmcache4j.cuda.internal.Downcalls}, the one class that builds descriptors and links
 *       handles (native-image metadata lists exactly those);
 *   <li>libc_h's variadic {@code syscall} invoker, which links a new descriptor for every argument
 *       list, becomes the address-only class in {@code libc_h.syscall.java.txt}: lmcache4j links the
 *       one shape it calls;
 *   <li>the {@code upcallHandle} helper of the {@code $shared} classes goes (no upcalls; it reflects).
 * </ol>
 *
 * Run: {@code java jextract/PostProcess.java src/main/java/lmcache4j/cuda/internal} from cuda-bindings/.
 * Fails, naming the file, when jextract's output no longer has the shape these rules expect.
 */
public final class PostProcess {
    private static final Pattern HOLDER = Pattern.compile(
            "( +)public static final FunctionDescriptor DESC = FunctionDescriptor\\.(?:of|ofVoid)\\((?s:.*?)\\);\\n\\n"
            + " +public static final MemorySegment ADDR = SYMBOL_LOOKUP\\.findOrThrow\\(\"(\\w+)\"\\);\\n\\n"
            + " +public static final MethodHandle HANDLE = Linker\\.nativeLinker\\(\\)\\.downcallHandle\\(ADDR, DESC\\);");
    private static final Pattern UPCALL = Pattern.compile(
            "    static MethodHandle upcallHandle\\(Class<\\?> fi, String name, FunctionDescriptor fdesc\\) \\{\\n(?s:.*?)\\n    }\\n\\n");
    private static final String STATIC_IMPORTS_END = "import static java.lang.foreign.MemoryLayout.PathElement.*;\n";

    public static void main(String[] args) throws IOException {
        Path root = Path.of(args.length == 1 ? args[0] : "src/main/java/lmcache4j/cuda/internal");
        Path jextractDir = Path.of("jextract");
        holders(root.resolve("cudart/cudart_h.java"));
        holders(root.resolve("libc/libc_h.java"));
        syscall(root.resolve("libc/libc_h.java"), Files.readString(jextractDir.resolve("libc_h.syscall.java.txt")));
        shared(root.resolve("cudart/cudart_h$shared.java"));
        shared(root.resolve("libc/libc_h$shared.java"));
    }

    private static void holders(Path file) throws IOException {
        String s = Files.readString(file);
        if (!s.contains(STATIC_IMPORTS_END)) {
            throw new IllegalStateException(file + ": no '" + STATIC_IMPORTS_END.strip() + "' to put the Downcalls import after");
        }
        s = s.replace(STATIC_IMPORTS_END, STATIC_IMPORTS_END + "\nimport lmcache4j.cuda.internal.Downcalls;\n");
        Matcher m = HOLDER.matcher(s);
        StringBuilder out = new StringBuilder();
        int n = 0;
        while (m.find()) {
            String indent = m.group(1);
            String name = m.group(2);
            m.appendReplacement(out, Matcher.quoteReplacement(
                    indent + "public static final FunctionDescriptor DESC = Downcalls." + name + ".descriptor();\n\n"
                    + indent + "public static final MemorySegment ADDR = SYMBOL_LOOKUP.findOrThrow(Downcalls." + name + ".symbol());\n\n"
                    + indent + "public static final MethodHandle HANDLE = Downcalls.link(ADDR, Downcalls." + name + ");"));
            n++;
        }
        m.appendTail(out);
        if (n == 0) {
            throw new IllegalStateException(file + ": no function holder of the expected shape");
        }
        Files.writeString(file, out.toString());
        System.out.println(file + ": " + n + " function holders take Downcalls' descriptors and handles");
    }

    private static void syscall(Path file, String replacement) throws IOException {
        String s = Files.readString(file);
        int doc = s.indexOf("    /**\n     * Variadic invoker class for:\n     * {@snippet lang=c :\n     * extern long syscall(");
        int start = s.indexOf("    public static class syscall {", doc);
        if (doc < 0 || start < 0) {
            throw new IllegalStateException(file + ": no variadic syscall invoker of the expected shape");
        }
        int depth = 0;
        int end = s.indexOf('{', start);
        for (; end < s.length(); end++) {
            char c = s.charAt(end);
            if (c == '{') {
                depth++;
            } else if (c == '}' && --depth == 0) {
                break;
            }
        }
        Files.writeString(file, s.substring(0, doc) + replacement + s.substring(end + 2));
        System.out.println(file + ": syscall is lmcache4j's address-only class");
    }

    private static void shared(Path file) throws IOException {
        String s = Files.readString(file);
        Matcher m = UPCALL.matcher(s);
        if (!m.find()) {
            throw new IllegalStateException(file + ": no upcallHandle helper of the expected shape");
        }
        Files.writeString(file, m.replaceFirst(""));
        System.out.println(file + ": upcallHandle removed");
    }
}
