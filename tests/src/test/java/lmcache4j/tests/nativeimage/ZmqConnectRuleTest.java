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
 * checks), so a new socket cannot forget it.
 */
class ZmqConnectRuleTest {
    private static final String SOCKET = "org/zeromq/ZMQ$Socket";
    private static final String THE_ONE_CALLER = "lmcache4j/engine/zmq/ZmqConnect";

    @Test
    void onlyZmqConnectConnectsJeroMqSockets() throws IOException {
        List<String> direct = new ArrayList<>();
        int viaHelper = 0;
        for (LmcacheModules module : LmcacheModules.ALL) {
            for (ClassModel model : module.classModels()) {
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
        }
        assertEquals(List.of(), direct, "JeroMQ sockets connected without ZmqConnect's handshake timer");
        assertTrue(viaHelper >= 7, "the scan saw the connects it should (controller worker, lookup client and server, "
                + "peer locator, controller's worker connections, ingest bench): " + viaHelper);
    }
}
