package lmcache4j.tests.nativeimage;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.io.Reader;
import java.lang.classfile.Annotation;
import java.lang.classfile.AnnotationValue;
import java.lang.classfile.Attributes;
import java.lang.classfile.ClassModel;
import java.lang.classfile.attribute.RuntimeVisibleAnnotationsAttribute;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Supplier;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import com.oracle.svm.configure.ConfigurationBase;
import com.oracle.svm.configure.ConfigurationParserOption;
import com.oracle.svm.configure.config.ForeignConfiguration;
import com.oracle.svm.configure.config.ResourceConfiguration;
import com.oracle.svm.configure.config.SerializationConfiguration;
import com.oracle.svm.configure.config.TypeConfiguration;

/**
 * Every lmcache4j module's jar carries {@code META-INF/native-image/io.lmcache4j/<artifact>/reachability-metadata.json},
 * GraalVM's own strict parsers ({@code svm-configure}, the code {@code native-image} reads these
 * files with) accept every section of it, and what those parsers leave unchecked is checked here:
 * foreign type names are canonical layouts of this platform, and every type and member named for
 * reflection exists.
 */
class NativeImageMetadataTest {
    static Stream<LmcacheModules> modules() {
        return LmcacheModules.ALL.stream();
    }

    @ParameterizedTest
    @MethodSource("modules")
    void graalVmsStrictParsersAcceptTheFile(LmcacheModules module) throws IOException {
        assertTrue(Files.isRegularFile(module.metadataFile()), module.metadataPath() + " is missing in " + module.folder());
        List<Supplier<ConfigurationBase<?, ?>>> sections = List.of(ForeignConfiguration::new, TypeConfiguration::new,
                ResourceConfiguration::new, SerializationConfiguration::new);
        for (Supplier<ConfigurationBase<?, ?>> section : sections) {
            ConfigurationBase<?, ?> configuration = section.get();
            try (Reader reader = Files.newBufferedReader(module.metadataFile())) {
                configuration.createParser(true, EnumSet.of(ConfigurationParserOption.STRICT_CONFIGURATION))
                        .parseAndRegister(reader);
            } catch (RuntimeException e) {
                fail(module.metadataPath() + ": GraalVM's " + configuration.getClass().getSimpleName()
                        + " parser refuses it: " + e.getMessage(), e);
            }
        }
    }

    @ParameterizedTest
    @MethodSource("modules")
    void foreignTypeNamesAreCanonicalLayoutsAndOptionsAreLinkerOptions(LmcacheModules module) throws IOException {
        Map<String, Object> metadata = MetadataFile.read(module.metadataFile());
        Map<String, Object> foreign = MetadataFile.asMap(metadata.getOrDefault("foreign", Map.of()));
        for (String kind : List.of("downcalls", "upcalls")) {
            for (Object call : MetadataFile.section(foreign, kind)) {
                Map<String, Object> entry = MetadataFile.asMap(call);
                String returnType = (String) entry.get("returnType");
                assertTrue(returnType.equals("void") || LayoutGrammar.isValid(returnType),
                        module.metadataPath() + ": return type " + returnType + " of " + entry);
                @SuppressWarnings("unchecked")
                List<String> parameters = (List<String>) entry.get("parameterTypes");
                for (String parameter : parameters) {
                    assertTrue(LayoutGrammar.isValid(parameter),
                            module.metadataPath() + ": parameter type " + parameter + " of " + entry);
                }
                Map<String, Object> options = MetadataFile.asMap(entry.getOrDefault("options", Map.of()));
                Set<String> known = kind.equals("downcalls") ? Set.of("firstVariadicArg", "captureCallState", "critical") : Set.of();
                assertTrue(known.containsAll(options.keySet()), module.metadataPath() + ": unknown option in " + entry);
                if (options.get("firstVariadicArg") instanceof Long index) {
                    assertTrue(index >= 0 && index <= parameters.size(), "firstVariadicArg out of range in " + entry);
                }
                if (options.containsKey("captureCallState")) {
                    assertEquals(Boolean.TRUE, options.get("captureCallState"), entry.toString());
                }
            }
        }
    }

    @ParameterizedTest
    @MethodSource("modules")
    void everyTypeAndMemberNamedForReflectionExists(LmcacheModules module) throws IOException {
        ClassIndex index = ClassIndex.forTests();
        for (Object element : MetadataFile.section(MetadataFile.read(module.metadataFile()), "reflection")) {
            Map<String, Object> entry = MetadataFile.asMap(element);
            String type = (String) entry.get("type");
            ClassModel model = index.find(type).orElseThrow(
                    () -> new AssertionError(module.metadataPath() + " names " + type + ", which no module or dependency has"));
            for (Object field : MetadataFile.section(entry, "fields")) {
                String name = (String) MetadataFile.asMap(field).get("name");
                assertTrue(model.fields().stream().anyMatch(f -> f.fieldName().equalsString(name)),
                        module.metadataPath() + ": " + type + " has no field " + name);
            }
            for (Object method : MetadataFile.section(entry, "methods")) {
                String name = (String) MetadataFile.asMap(method).get("name");
                assertTrue(model.methods().stream().anyMatch(m -> m.methodName().equalsString(name)),
                        module.metadataPath() + ": " + type + " has no method " + name);
            }
        }
    }

    /** picocli reads the commands' annotated fields and methods and builds them reflectively: each such class is registered. */
    @Test
    void everyPicocliAnnotatedCommandClassIsRegisteredAndNoOtherLmcacheClass() throws IOException {
        LmcacheModules cli = LmcacheModules.ALL.stream().filter(m -> m.folder().equals("cli")).findFirst().orElseThrow();
        Set<String> annotated = new TreeSet<>();
        for (ClassModel model : cli.classModels()) {
            if (usesPicocliAnnotations(model)) {
                annotated.add(model.thisClass().asInternalName().replace('/', '.'));
                annotated.addAll(classesNamedByPicocli(model)); // converters: picocli instantiates them
            }
        }
        assertTrue(annotated.size() >= 5, "the scan found the commands: " + annotated);
        Set<String> registered = new TreeSet<>();
        for (Object element : MetadataFile.section(MetadataFile.read(cli.metadataFile()), "reflection")) {
            String type = (String) MetadataFile.asMap(element).get("type");
            if (type.startsWith("lmcache4j.")) {
                registered.add(type);
            }
        }
        assertEquals(annotated, registered, cli.metadataPath() + " must register exactly the classes picocli reflects on");
    }

    /** The lmcache4j classes a picocli annotation names as a value ({@code converter = X.class}). */
    private static Set<String> classesNamedByPicocli(ClassModel model) {
        Set<String> named = new TreeSet<>();
        picocliAnnotations(model).forEach(a -> a.elements().forEach(e -> {
            List<AnnotationValue> values = e.value() instanceof AnnotationValue.OfArray array ? array.values() : List.of(e.value());
            for (AnnotationValue v : values) {
                if (v instanceof AnnotationValue.OfClass c) {
                    String type = c.classSymbol().descriptorString();
                    if (type.startsWith("Llmcache4j/")) {
                        named.add(type.substring(1, type.length() - 1).replace('/', '.'));
                    }
                }
            }
        }));
        return named;
    }

    private static boolean usesPicocliAnnotations(ClassModel model) {
        return !picocliAnnotations(model).isEmpty();
    }

    private static List<Annotation> picocliAnnotations(ClassModel model) {
        List<RuntimeVisibleAnnotationsAttribute> attributes = new ArrayList<>();
        model.findAttribute(Attributes.runtimeVisibleAnnotations()).ifPresent(attributes::add);
        model.fields().forEach(f -> f.findAttribute(Attributes.runtimeVisibleAnnotations()).ifPresent(attributes::add));
        model.methods().forEach(m -> m.findAttribute(Attributes.runtimeVisibleAnnotations()).ifPresent(attributes::add));
        return attributes.stream().flatMap(a -> a.annotations().stream())
                .filter(a -> a.className().stringValue().startsWith("Lpicocli/CommandLine$")).toList();
    }
}
