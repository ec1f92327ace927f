package lmcache4j.server.pd;

/** The JDK HTTP server limits a PD process needs, set unless the operator set them. */
final class PdLimits {
    /** The longest a PD call may take to answer, in seconds: a long prefill plus its decode. */
    static final String ANSWER_SECONDS = "600";

    private PdLimits() {
    }

    /** {@code sun.net.httpserver.maxRspTime} and {@code maxReqTime} of {@value #ANSWER_SECONDS} s, unless set. */
    static void allowLongAnswers() {
        System.getProperties().putIfAbsent("sun.net.httpserver.maxRspTime", ANSWER_SECONDS);
        System.getProperties().putIfAbsent("sun.net.httpserver.maxReqTime", ANSWER_SECONDS);
    }
}
