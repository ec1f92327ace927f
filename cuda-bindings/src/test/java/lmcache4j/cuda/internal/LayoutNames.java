package lmcache4j.cuda.internal;

import java.lang.foreign.AddressLayout;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.GroupLayout;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.PaddingLayout;
import java.lang.foreign.SequenceLayout;
import java.lang.foreign.StructLayout;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * Writes a {@link MemoryLayout} in the layout syntax of GraalVM's reachability metadata: a
 * canonical layout name of {@link Linker#canonicalLayouts()}, or {@code struct(...)},
 * {@code union(...)}, {@code sequence(N, ...)}, {@code padding(N)} and {@code align(N, ...)}
 * around them. Names given to layouts and the target layouts of pointers are not part of a
 * function's ABI, so they are left out.
 */
final class LayoutNames {
    /** Where several canonical names denote one layout (long, long long, size_t), the C name first. */
    private static final List<String> PREFERRED = List.of("void*", "bool", "char", "short", "int", "long",
            "long long", "size_t", "wchar_t", "float", "double");

    private LayoutNames() {
    }

    /** {@code "void"} for a descriptor without return layout, else the return layout's name. */
    static String returnType(FunctionDescriptor descriptor) {
        return descriptor.returnLayout().map(LayoutNames::of).orElse("void");
    }

    static List<String> parameterTypes(FunctionDescriptor descriptor) {
        return descriptor.argumentLayouts().stream().map(LayoutNames::of).toList();
    }

    static String of(MemoryLayout layout) {
        String name = switch (layout) {
            case AddressLayout _ -> "void*";
            case ValueLayout value -> canonicalName(value);
            case StructLayout struct -> "struct(" + members(struct) + ")";
            case GroupLayout union -> "union(" + members(union) + ")";
            case SequenceLayout sequence -> "sequence(" + sequence.elementCount() + ", " + of(sequence.elementLayout()) + ")";
            case PaddingLayout padding -> "padding(" + padding.byteSize() + ")";
        };
        long natural = naturalAlignment(layout);
        return layout.byteAlignment() == natural ? name : "align(" + layout.byteAlignment() + ", " + name + ")";
    }

    private static String members(GroupLayout group) {
        return group.memberLayouts().stream().map(LayoutNames::of).collect(Collectors.joining(", "));
    }

    private static String canonicalName(ValueLayout value) {
        Map<String, MemoryLayout> canonical = Linker.nativeLinker().canonicalLayouts();
        ValueLayout bare = value.withoutName().withByteAlignment(value.byteSize());
        for (String name : PREFERRED) {
            MemoryLayout candidate = canonical.get(name);
            if (candidate != null && candidate.withoutName().withByteAlignment(candidate.byteSize()).equals(bare)) {
                return name;
            }
        }
        return canonical.entrySet().stream()
                .filter(e -> e.getValue().withoutName().withByteAlignment(e.getValue().byteSize()).equals(bare))
                .map(Map.Entry::getKey).sorted().findFirst()
                .orElseThrow(() -> new IllegalArgumentException(value + " is no canonical layout of this platform"));
    }

    /** The alignment the layout would have if nobody had changed it. */
    private static long naturalAlignment(MemoryLayout layout) {
        return switch (layout) {
            case ValueLayout value -> value instanceof AddressLayout
                    ? Linker.nativeLinker().canonicalLayouts().get("void*").byteAlignment()
                    : value.byteSize();
            case GroupLayout group -> group.memberLayouts().stream().mapToLong(LayoutNames::naturalAlignment).max().orElse(1);
            case SequenceLayout sequence -> naturalAlignment(sequence.elementLayout());
            case PaddingLayout _ -> 1;
        };
    }
}
