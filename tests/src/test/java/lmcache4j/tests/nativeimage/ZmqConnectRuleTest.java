package lmcache4j.tests.nativeimage;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.classfile.ClassModel;
import java.lang.classfile.MethodModel;
import java.lang.classfile.instruction.InvokeInstruction;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;

/**
 * Every JeroMQ socket lmcache4j connects goes through {@code ZmqConnect}, which sets the handshake
 * timer that bounds JeroMQ's occasional stuck handshake to seconds instead of 30 s (see its
 * javadoc). A bytecode scan of every module (it shares the class reading of the native-image
 * checks), main and test classes alike, so a new socket cannot forget it.
 */
class ZmqConnectRuleTest {
    private static final String SOCKET = "org/zeromq/ZMQ$Socket";
    private static final String THE_ONE_CALLER = "lmcache4j/engine/zmq/ZmqConnect";

    @Test
    void onlyZmqConnectConnectsJeroMqSockets() throws IOException {
        List<String> direct = new ArrayList<>();
        int viaHelper = 0;
        List<ClassModel> models = new ArrayList<>();
        for (LmcacheModules module : LmcacheModules.ALL) {
            models.addAll(module.classModels());
        }
        // The tests' own peers too (fake workers, junk senders): a stuck handshake there is a 30 s flake.
        models.addAll(testClassModels());
        for (ClassModel model : models) {
            String owner = model.thisClass().asInternalName();
            for (MethodModel method : model.methods()) {
                for (var element : method.code().map(c -> c.elementList()).orElse(List.of())) {
                    if (element instanceof InvokeInstruction call) {
                        String calledOwner = call.owner().asInternalName();
                        String name = call.name().stringValue();
                        if (calledOwner.equals(SOCKET) && name.equals("connect") && !owner.equals(THE_ONE_CALLER)) {
                            direct.add(owner.replace('/', '.') + "." + method.methodName().stringValue());
                        }
                        if (calledOwner.equals(THE_ONE_CALLER) && name.equals("connect")) {
                            viaHelper++;
                        }
                    }
                }
            }
        }
        assertEquals(List.of(), direct, "JeroMQ sockets connected without ZmqConnect's handshake timer");
        assertTrue(models.stream().anyMatch(m -> m.thisClass().asInternalName().endsWith("/FakeWorker")),
                "the scan read the modules' test classes");
        assertTrue(viaHelper >= 7, "the scan saw the connects it should (controller worker, lookup client and server, "
                + "peer locator, controller's worker connections, ingest bench): " + viaHelper);
    }

    /** Every compiled test class of the modules (and of this one) that have been built with tests. */
    private static List<ClassModel> testClassModels() throws IOException {
        List<ClassModel> out = new ArrayList<>();
        List<java.nio.file.Path> roots = new ArrayList<>();
        for (LmcacheModules module : LmcacheModules.ALL) {
            roots.add(module.classes().resolveSibling("test-classes"));
        }
        roots.add(java.nio.file.Path.of("target", "test-classes").toAbsolutePath());
        for (java.nio.file.Path root : roots) {
            if (!java.nio.file.Files.isDirectory(root)) {
                continue;
            }
            try (var files = java.nio.file.Files.walk(root)) {
                for (java.nio.file.Path f : files.filter(p -> p.toString().endsWith(".class")
                        && !p.endsWith("module-info.class")).toList()) {
                    out.add(java.lang.classfile.ClassFile.of().parse(java.nio.file.Files.readAllBytes(f)));
                }
            }
        }
        return out;
    }
}
