package lmcache4j.tests.nativeimage;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.classfile.ClassFile;
import java.lang.classfile.ClassModel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

/**
 * lmcache4j's modules as this build compiled them: each module's folder, Maven artifact, JPMS name
 * and the classes under its {@code target/classes} (the reactor builds every module before this
 * one, see the tests module's pom).
 */
record LmcacheModules(String folder, String artifactId, String moduleName) {
    static final List<LmcacheModules> ALL = List.of(
            new LmcacheModules("cuda-bindings", "lmcache4j-cuda-bindings", "lmcache4j.cuda"),
            new LmcacheModules("allocator", "lmcache4j-allocator", "lmcache4j.allocator"),
            new LmcacheModules("engine", "lmcache4j-engine", "lmcache4j.engine"),
            new LmcacheModules("server", "lmcache4j-server", "lmcache4j.server"),
            new LmcacheModules("mp-server", "lmcache4j-mp-server", "lmcache4j.server.mp"),
            new LmcacheModules("bench", "lmcache4j-bench", "lmcache4j.bench"),
            new LmcacheModules("cli", "lmcache4j-cli", "lmcache4j.cli"));

    Path classes() {
        return Path.of("..", folder, "target", "classes").toAbsolutePath().normalize();
    }

    /** Where the module's jar carries its native-image metadata. */
    String metadataPath() {
        return "META-INF/native-image/io.lmcache4j/" + artifactId + "/reachability-metadata.json";
    }

    Path metadataFile() {
        return classes().resolve(metadataPath());
    }

    /** Every compiled class of the module except its module-info. */
    List<ClassModel> classModels() {
        if (!Files.isDirectory(classes())) {
            throw new AssertionError(classes() + " is missing: build the module first (mvn verify builds every module)");
        }
        try (Stream<Path> files = Files.walk(classes())) {
            return files.filter(p -> p.toString().endsWith(".class") && !p.endsWith("module-info.class"))
                    .sorted().map(LmcacheModules::parse).toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static ClassModel parse(Path file) {
        try {
            return ClassFile.of().parse(Files.readAllBytes(file));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
