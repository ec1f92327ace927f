package lmcache4j.server.controller;

import lmcache4j.engine.controller.message.ControllerCodec;
import lmcache4j.engine.controller.message.ControllerMessage;
import lmcache4j.engine.controller.message.MalformedMessageException;

/** The controller's one door to the engine's codec (LMCache's msgspec msgpack encoding). */
final class Wire {
    private Wire() {
    }

    /** Decodes one frame, strictly and within the codec's bounds. */
    static ControllerMessage decode(byte[] frame) throws MalformedMessageException {
        return ControllerCodec.decode(frame);
    }

    static byte[] encode(ControllerMessage message) {
        return ControllerCodec.encode(message);
    }

    /** LMCache's class name of a message (its msgpack "type"): the records are named alike. */
    static String typeName(ControllerMessage message) {
        return message.getClass().getSimpleName();
    }
}
