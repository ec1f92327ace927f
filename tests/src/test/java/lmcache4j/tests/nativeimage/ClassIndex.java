package lmcache4j.tests.nativeimage;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.classfile.ClassFile;
import java.lang.classfile.ClassModel;
import java.net.URI;
import java.nio.file.FileSystem;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * Finds a class file by binary name in lmcache4j's compiled modules, the third-party jars the
 * commands run with ({@code cli/target/lib}) and the JDK's own modules, without loading it.
 */
final class ClassIndex {
    private final List<Path> roots;

    private ClassIndex(List<Path> roots) {
        this.roots = roots;
    }

    static ClassIndex forTests() throws IOException {
        List<Path> roots = new ArrayList<>();
        LmcacheModules.ALL.forEach(m -> roots.add(m.classes()));
        Path lib = Path.of("..", "cli", "target", "lib");
        if (Files.isDirectory(lib)) {
            try (Stream<Path> jars = Files.list(lib)) {
                for (Path jar : jars.filter(p -> p.toString().endsWith(".jar")).toList()) {
                    roots.add(FileSystems.newFileSystem(jar).getPath("/"));
                }
            }
        }
        FileSystem jrt = FileSystems.getFileSystem(URI.create("jrt:/"));
        try (Stream<Path> modules = Files.list(jrt.getPath("/modules"))) {
            roots.addAll(modules.toList());
        }
        return new ClassIndex(roots);
    }

    Optional<ClassModel> find(String binaryName) {
        String file = binaryName.replace('.', '/') + ".class";
        for (Path root : roots) {
            Path candidate = root.resolve(file);
            if (Files.isRegularFile(candidate)) {
                try {
                    return Optional.of(ClassFile.of().parse(Files.readAllBytes(candidate)));
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            }
        }
        return Optional.empty();
    }
}
