package lmcache4j.bench.demo.cluster;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.file.Path;
import java.util.List;

import org.junit.jupiter.api.Test;

import lmcache4j.bench.demo.Workload;

/** The pipe protocol between the demo and its instance processes, and the spec that starts one. */
class InstanceProtocolTest {
    @Test
    void admitAndServeRoundTrip() {
        int[] prompt = {1, 2, 3, 127_999};
        var admit = (InstanceProtocol.Admit) InstanceProtocol.parse(InstanceProtocol.admit("kv_aware_p2p-7", prompt));
        assertEquals("kv_aware_p2p-7", admit.lookupId());
        assertArrayEquals(prompt, admit.prompt());

        Workload.Request r = new Workload.Request(7, Workload.Kind.CONVERSATION_TURN, "conversation 3 (système, turn 2)",
                prompt, new int[] {9, 8});
        var serve = (InstanceProtocol.Serve) InstanceProtocol.parse(InstanceProtocol.serve("id", 256, r));
        assertEquals(256, serve.hitTokens());
        assertEquals(r.index(), serve.request().index());
        assertEquals(r.kind(), serve.request().kind());
        assertEquals(r.subject(), serve.request().subject());
        assertArrayEquals(r.prompt(), serve.request().prompt());
        assertArrayEquals(r.response(), serve.request().response());
        assertEquals(InstanceProtocol.Stats.class, InstanceProtocol.parse("stats").getClass());
    }

    @Test
    void malformedLinesAreRefusedWithTheReason() {
        for (String bad : List.of("", "hello", "admit onlyid", "admit id 1,x", "serve id 1 2 NEW_CONVERSATION s 9 1,2",
                "serve id 1 2 NOT_A_KIND s 1 1,2", "serve id 1 2 NEW_CONVERSATION s -1 1,2")) {
            assertThrows(IllegalArgumentException.class, () -> InstanceProtocol.parse(bad), bad);
        }
    }

    @Test
    void aSpecSurvivesItsJson() {
        InstanceSpec spec = new InstanceSpec("instance-1", 0.5, Path.of("/tmp/x y"), 2.0, 8, 42, "127.0.0.1:1",
                "127.0.0.1:2", 3, "tcp://127.0.0.1:4", "tcp://127.0.0.1:5",
                "/tmp/secret", "/tmp/p2p token");
        assertEquals(spec, InstanceSpec.fromJson(spec.toJson()));
    }
}
