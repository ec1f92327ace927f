package lmcache4j.tests.nativeimage;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.classfile.ClassModel;
import java.lang.classfile.MethodModel;
import java.lang.classfile.instruction.InvokeInstruction;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

import org.junit.jupiter.api.Test;

/**
 * Every JeroMQ context lmcache4j makes is an {@code OwnedZContext}, whose I/O threads carry
 * {@code PollerRepair}: without it, JeroMQ 0.6.0 now and then loses a connection it just made
 * until the handshake timer (30 s) remakes it. A bytecode scan of every module, main and test
 * classes alike (the tests' own peers too: a lost connection there is a 30 s flake), for the ways
 * to make a context: {@code new ZContext}, {@code ZContext.shadow}, {@code ZMQ.context},
 * {@code new ZMQ.Context}, {@code new zmq.Ctx}, {@code zmq.ZMQ.init}/{@code createContext}.
 */
class ZmqContextRuleTest {
    private static final String OWNED = "lmcache4j/engine/zmq/OwnedZContext";
    /** JeroMQ as it ships, measured on purpose against the repaired contexts by {@code bench zmq}. */
    private static final Set<String> AS_SHIPPED = Set.of("lmcache4j/bench/zmq/JeromqAsShipped");
    /** The repair's own test: it installs {@code PollerRepair} by hand on a bare context's poller. */
    private static final Set<String> REPAIR_UNDER_TEST = Set.of("lmcache4j/engine/zmq/PollerRepairTest");

    private record Maker(String owner, String name) {
    }

    private static final List<Maker> MAKERS = List.of(new Maker("org/zeromq/ZContext", "<init>"),
            new Maker("org/zeromq/ZContext", "shadow"), new Maker("org/zeromq/ZMQ", "context"),
            new Maker("org/zeromq/ZMQ$Context", "<init>"), new Maker("zmq/Ctx", "<init>"), new Maker("zmq/ZMQ", "init"),
            new Maker("zmq/ZMQ", "createContext"));

    @Test
    void everyContextIsAnOwnedZContext() throws IOException {
        List<String> direct = new ArrayList<>();
        int owned = 0;
        List<ClassModel> models = new ArrayList<>();
        for (LmcacheModules module : LmcacheModules.ALL) {
            models.addAll(module.classModels());
        }
        models.addAll(ZmqContextRuleTest.testClassModels());
        for (ClassModel model : models) {
            String caller = model.thisClass().asInternalName();
            for (MethodModel method : model.methods()) {
                for (var element : method.code().map(c -> c.elementList()).orElse(List.of())) {
                    if (element instanceof InvokeInstruction call) {
                        Maker made = new Maker(call.owner().asInternalName(), call.name().stringValue());
                        if (MAKERS.contains(made) && !caller.equals(OWNED) && !AS_SHIPPED.contains(caller)
                                && !REPAIR_UNDER_TEST.contains(caller)) {
                            direct.add(caller.replace('/', '.') + "." + method.methodName().stringValue());
                        }
                        if (made.equals(new Maker(OWNED, "<init>"))) {
                            owned++;
                        }
                    }
                }
            }
        }
        assertEquals(List.of(), direct, "ZeroMQ contexts made without OwnedZContext (no PollerRepair)");
        assertTrue(models.stream().anyMatch(m -> m.thisClass().asInternalName().endsWith("/FakeWorker")),
                "the scan read the modules' test classes");
        assertTrue(owned >= 10, "the scan saw the contexts it should (controller, its worker, lookup client and server,"
                + " peer locator, KV events, the tests' peers): " + owned);
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
