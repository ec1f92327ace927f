package lmcache4j.tests.nativeimage;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.classfile.ClassModel;
import java.lang.classfile.CodeElement;
import java.lang.classfile.MethodModel;
import java.lang.classfile.constantpool.PoolEntry;
import java.lang.classfile.constantpool.Utf8Entry;
import java.lang.classfile.instruction.InvokeDynamicInstruction;
import java.lang.classfile.instruction.InvokeInstruction;
import java.lang.constant.DirectMethodHandleDesc;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;

import org.junit.jupiter.api.Test;

/**
 * A static check over lmcache4j's own classes (every module, bytecode read with
 * {@code java.lang.classfile}) for what a GraalVM native image forbids or can only do with
 * metadata: {@code Class.forName}, reflection, dynamic proxies, defining or hidden classes,
 * {@code Unsafe}, and native libraries loaded from a static initializer (which an image may run
 * at build time). Downcall descriptors and handles may only be made in {@code Downcalls}, the one
 * list the native-image metadata is checked against.
 */
class NativeImageConstraintsTest {
    /** Reflective lookups lmcache4j makes on purpose, each one registered in its module's metadata: site → type and field. */
    private static final Map<String, String> REGISTERED_LOOKUPS = Map.of(
            "lmcache4j.allocator.MemoryObj.<clinit>", "lmcache4j.allocator.MemoryObj.state",
            "lmcache4j.allocator.internal.PoolLock.<clinit>", "lmcache4j.allocator.internal.PoolLock.state");

    private static final String DOWNCALLS = "lmcache4j/cuda/internal/Downcalls";

    /**
     * {@code bench zmq}'s hand-written libzmq binding, which measures libzmq against JeroMQ on a JVM
     * (the launcher grants the bench module native access for that command alone); lmcache4j's
     * sockets are JeroMQ's, so no image links libzmq, and the bench module's metadata says so.
     */
    private static final String JVM_ONLY_BINDING = "lmcache4j/bench/zmq/LibZmq";

    /**
     * Written by JMH's annotation processor, not by lmcache4j: JMH runs these benchmarks from the
     * class path of a JVM, never in an image (the bench module's metadata says so).
     */
    private static final String JMH_GENERATED = "lmcache4j/bench/jmh/jmh_generated/";

    private record Forbidden(String owner, Set<String> names, String why) {
        boolean matches(String calledOwner, String calledName) {
            return owner.equals(calledOwner) && (names.isEmpty() || names.contains(calledName));
        }
    }

    private static final List<Forbidden> FORBIDDEN = List.of(
            new Forbidden("java/lang/Class", Set.of("forName"), "Class.forName needs reflection metadata"),
            new Forbidden("java/lang/Class", Set.of("getDeclaredMethod", "getDeclaredMethods", "getMethod", "getMethods",
                    "getDeclaredField", "getDeclaredFields", "getField", "getFields", "getDeclaredConstructor",
                    "getDeclaredConstructors", "getConstructor", "getConstructors", "newInstance", "getRecordComponents"),
                    "reflection needs metadata"),
            new Forbidden("java/lang/reflect/Method", Set.of("invoke"), "reflective call"),
            new Forbidden("java/lang/reflect/Constructor", Set.of("newInstance"), "reflective construction"),
            new Forbidden("java/lang/reflect/Field", Set.of(), "reflective field access"),
            new Forbidden("java/lang/invoke/MethodHandles$Lookup", Set.of("findVirtual", "findStatic", "findSpecial",
                    "findConstructor", "findGetter", "findSetter", "findStaticGetter", "findStaticSetter", "findVarHandle",
                    "findStaticVarHandle", "unreflect", "unreflectConstructor", "unreflectGetter", "unreflectSetter",
                    "unreflectVarHandle", "unreflectSpecial", "findClass"), "method-handle lookup needs reflection metadata"),
            new Forbidden("java/lang/reflect/Proxy", Set.of("newProxyInstance", "getProxyClass"), "dynamic proxy"),
            new Forbidden("java/lang/invoke/MethodHandles$Lookup", Set.of("defineClass", "defineHiddenClass",
                    "defineHiddenClassWithClassData"), "classes defined at run time"),
            new Forbidden("java/lang/ClassLoader", Set.of("defineClass"), "classes defined at run time"),
            new Forbidden("java/lang/invoke/MethodHandleProxies", Set.of("asInterfaceInstance"), "dynamic proxy"));

    private static final List<Forbidden> FORBIDDEN_IN_STATIC_INITIALIZERS = List.of(
            new Forbidden("java/lang/System", Set.of("loadLibrary", "load"), "native library loaded at class initialisation"),
            new Forbidden("java/lang/Runtime", Set.of("loadLibrary", "load"), "native library loaded at class initialisation"),
            new Forbidden("java/lang/foreign/SymbolLookup", Set.of("libraryLookup"), "native library loaded at class initialisation"));

    private static final List<Forbidden> DOWNCALLS_ONLY = List.of(
            new Forbidden("java/lang/foreign/FunctionDescriptor", Set.of("of", "ofVoid", "appendArgumentLayouts",
                    "insertArgumentLayouts", "changeReturnLayout", "dropReturnLayout"), "a descriptor built outside Downcalls"),
            new Forbidden("java/lang/foreign/Linker", Set.of("downcallHandle", "upcallStub"), "a handle linked outside Downcalls"));

    @Test
    void lmcacheClassesUseNothingANativeImageForbidsOrCannotSeeWithoutMetadata() throws IOException {
        List<String> violations = new ArrayList<>();
        Set<String> registeredSitesSeen = new TreeSet<>();
        int classes = 0;
        for (LmcacheModules module : LmcacheModules.ALL) {
            for (ClassModel model : module.classModels()) {
                String className = model.thisClass().asInternalName();
                if (className.startsWith(JMH_GENERATED)) {
                    continue;
                }
                classes++;
                mentionsUnsafe(model).ifPresentOrElse(u -> violations.add(className.replace('/', '.') + " refers to " + u), () -> { });
                for (MethodModel method : model.methods()) {
                    String site = className.replace('/', '.') + "." + method.methodName().stringValue();
                    boolean staticInitializer = method.methodName().equalsString("<clinit>");
                    for (Called called : calls(method)) {
                        for (Forbidden rule : FORBIDDEN) {
                            if (rule.matches(called.owner(), called.name())) {
                                if (REGISTERED_LOOKUPS.containsKey(site) && called.name().equals("findVarHandle")) {
                                    registeredSitesSeen.add(site);
                                } else {
                                    violations.add(site + " calls " + called + ": " + rule.why());
                                }
                            }
                        }
                        if (staticInitializer) {
                            FORBIDDEN_IN_STATIC_INITIALIZERS.stream().filter(r -> r.matches(called.owner(), called.name()))
                                    .forEach(r -> violations.add(site + " calls " + called + ": " + r.why()));
                        }
                        if (!className.equals(DOWNCALLS) && !className.equals(JVM_ONLY_BINDING)) {
                            DOWNCALLS_ONLY.stream().filter(r -> r.matches(called.owner(), called.name()))
                                    .forEach(r -> violations.add(site + " calls " + called + ": " + r.why()));
                        }
                    }
                }
            }
        }
        assertTrue(classes > 200, "the scan read the modules' classes, found " + classes);
        assertEquals(List.of(), violations, "constructs a native image forbids or needs metadata for");
        assertEquals(REGISTERED_LOOKUPS.keySet(), registeredSitesSeen, "every registered lookup site still exists");
    }

    /** The VarHandle lookups kept in the allocator are listed in its metadata, field by field. */
    @Test
    void theRegisteredLookupsAreInTheAllocatorsMetadata() throws IOException {
        LmcacheModules allocator = LmcacheModules.ALL.stream().filter(m -> m.folder().equals("allocator")).findFirst().orElseThrow();
        Set<String> registered = new TreeSet<>();
        for (Object element : MetadataFile.section(MetadataFile.read(allocator.metadataFile()), "reflection")) {
            Map<String, Object> entry = MetadataFile.asMap(element);
            for (Object field : MetadataFile.section(entry, "fields")) {
                registered.add(entry.get("type") + "." + MetadataFile.asMap(field).get("name"));
            }
        }
        assertEquals(new TreeSet<>(REGISTERED_LOOKUPS.values()), registered);
    }

    /** A call found in a method body: a direct invocation, or a method handle constant a lambda or method reference uses. */
    private record Called(String owner, String name) {
        @Override
        public String toString() {
            return owner.replace('/', '.') + "." + name;
        }
    }

    private static List<Called> calls(MethodModel method) {
        List<Called> calls = new ArrayList<>();
        method.code().ifPresent(code -> {
            for (CodeElement element : code) {
                switch (element) {
                    case InvokeInstruction invoke -> calls.add(new Called(invoke.owner().asInternalName(), invoke.name().stringValue()));
                    case InvokeDynamicInstruction indy -> indy.bootstrapArgs().forEach(arg -> {
                        if (arg instanceof DirectMethodHandleDesc handle) {
                            calls.add(new Called(handle.owner().descriptorString().replaceAll("^L|;$", ""), handle.methodName()));
                        }
                    });
                    default -> {
                    }
                }
            }
        });
        return calls;
    }

    private static Optional<String> mentionsUnsafe(ClassModel model) {
        for (PoolEntry entry : model.constantPool()) {
            if (entry instanceof Utf8Entry utf8) {
                String text = utf8.stringValue();
                if (text.contains("sun/misc/Unsafe") || text.contains("jdk/internal/misc/Unsafe")) {
                    return Optional.of(text);
                }
            }
        }
        return Optional.empty();
    }
}
