package lmcache4j.bench.demo;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;

/**
 * The requests a serving engine sees, generated deterministically from a seed: a few shared system
 * prompts; users holding multi-turn conversations (each turn's prompt is the whole history so far,
 * the previous answers included, plus a new message); and long documents that are queried again and
 * again with different questions, the popular ones more often. Every request carries the tokens
 * the model "generates" in answer, which the engine stores with the prompt, as a serving engine
 * stores a finished request.
 *
 * <p>Not thread-safe: one simulator draws from it.
 */
public final class Workload {
    /** Token ids are drawn below a Llama-3-sized vocabulary. */
    static final int VOCABULARY = 128_000;

    /** What kind of request it is. */
    public enum Kind {
        /** The first turn of a conversation: a system prompt and the user's first message. */
        NEW_CONVERSATION("new conversations"),
        /** A later turn: the conversation so far plus a new message. */
        CONVERSATION_TURN("follow-up turns"),
        /** A system prompt, a long document and a question about it. */
        DOCUMENT_QUERY("document queries");

        private final String plural;

        Kind(String plural) {
            this.plural = plural;
        }

        /** How the report names requests of this kind. */
        public String plural() {
            return plural;
        }
    }

    /**
     * One request.
     *
     * @param index    its position in the workload, from 0
     * @param kind     what it is
     * @param subject  the conversation or document it belongs to, for messages
     * @param prompt   the prompt's tokens (what is looked up and retrieved)
     * @param response the tokens generated in answer (computed, then stored with the prompt)
     */
    public record Request(int index, Kind kind, String subject, int[] prompt, int[] response) {
        /** Prompt and response: what the engine stores when the request ends. */
        public int[] sequence() {
            int[] all = Arrays.copyOf(prompt, prompt.length + response.length);
            System.arraycopy(response, 0, all, prompt.length, response.length);
            return all;
        }

        public int length() {
            return prompt.length + response.length;
        }
    }

    /**
     * The shape of the workload.
     *
     * @param seed             the random seed
     * @param systemPrompts    shared system prompts
     * @param documents        long documents
     * @param maxConversations conversations active at once; a finished one makes room for a new one
     * @param maxTokens        the longest request (prompt + response); a conversation that would
     *                         outgrow it ends
     */
    public record Shape(long seed, int systemPrompts, int documents, int maxConversations, int maxTokens) {
        public static final int DEFAULT_SYSTEM_PROMPTS = 4;
        public static final int DEFAULT_DOCUMENTS = 6;
        public static final int DEFAULT_MAX_CONVERSATIONS = 12;
        public static final int DEFAULT_MAX_TOKENS = 8192;

        public Shape {
            if (systemPrompts < 1 || documents < 1 || maxConversations < 1) {
                throw new IllegalArgumentException("need at least one system prompt, document and conversation");
            }
            if (maxTokens < MIN_MAX_TOKENS) {
                throw new IllegalArgumentException("maxTokens must be at least " + MIN_MAX_TOKENS + ", was " + maxTokens);
            }
        }

        public static Shape defaults(long seed) {
            return new Shape(seed, DEFAULT_SYSTEM_PROMPTS, DEFAULT_DOCUMENTS, DEFAULT_MAX_CONVERSATIONS, DEFAULT_MAX_TOKENS);
        }
    }

    // Lengths in tokens, [min, max].
    static final int SYSTEM_MIN = 300;
    static final int SYSTEM_MAX = 1500;
    static final int DOCUMENT_MIN = 2000;
    static final int DOCUMENT_MAX = 5500;
    static final int MESSAGE_MIN = 20;
    static final int MESSAGE_MAX = 250;
    static final int ANSWER_MIN = 40;
    static final int ANSWER_MAX = 400;
    static final int QUESTION_MIN = 15;
    static final int QUESTION_MAX = 60;
    /** Shares of the request mix: document queries, new conversations (while there is room), the rest follow-up turns. */
    static final double DOCUMENT_SHARE = 0.40;
    static final double NEW_CONVERSATION_SHARE = 0.12;
    /** The longest single request a shape may produce without conversations: system + document + question + answer. */
    static final int MIN_MAX_TOKENS = SYSTEM_MAX + DOCUMENT_MAX + QUESTION_MAX + ANSWER_MAX;

    private final Shape shape;
    private final SplittableRandom random;
    private final int[][] systemPrompts;
    private final int[][] documents;
    private final int[] documentSystem;
    private final double[] documentPopularity; // cumulative, Zipf-like
    private final List<Conversation> active = new ArrayList<>();
    private int conversationsStarted;
    private int next;

    private static final class Conversation {
        final String name;
        int[] history; // system prompt + every turn so far, answers included

        Conversation(String name, int[] history) {
            this.name = name;
            this.history = history;
        }
    }

    public Workload(Shape shape) {
        this.shape = shape;
        this.random = new SplittableRandom(shape.seed());
        systemPrompts = new int[shape.systemPrompts()][];
        for (int i = 0; i < systemPrompts.length; i++) {
            systemPrompts[i] = tokens(SYSTEM_MIN, SYSTEM_MAX);
        }
        documents = new int[shape.documents()][];
        documentSystem = new int[shape.documents()];
        documentPopularity = new double[shape.documents()];
        double sum = 0;
        for (int i = 0; i < documents.length; i++) {
            documents[i] = tokens(DOCUMENT_MIN, DOCUMENT_MAX);
            documentSystem[i] = random.nextInt(systemPrompts.length);
            sum += 1.0 / (i + 1);
            documentPopularity[i] = sum;
        }
        for (int i = 0; i < documentPopularity.length; i++) {
            documentPopularity[i] /= sum;
        }
    }

    public Shape shape() {
        return shape;
    }

    /** Tokens of the system prompts and documents, the shared material. */
    public long sharedTokens() {
        long n = 0;
        for (int[] s : systemPrompts) {
            n += s.length;
        }
        for (int[] d : documents) {
            n += d.length;
        }
        return n;
    }

    /** Conversations started so far. */
    public int conversationsStarted() {
        return conversationsStarted;
    }

    /** The next request. */
    public Request next() {
        int index = next++;
        double r = random.nextDouble();
        if (r < DOCUMENT_SHARE) {
            int doc = document();
            int[] prompt = concat(concat(systemPrompts[documentSystem[doc]], documents[doc]),
                    tokens(QUESTION_MIN, QUESTION_MAX));
            return new Request(index, Kind.DOCUMENT_QUERY, "document " + doc, prompt, tokens(ANSWER_MIN, ANSWER_MAX));
        }
        if (active.isEmpty() || (r < DOCUMENT_SHARE + NEW_CONVERSATION_SHARE && active.size() < shape.maxConversations())) {
            return newConversation(index);
        }
        Conversation c = active.get(random.nextInt(active.size()));
        int[] message = tokens(MESSAGE_MIN, MESSAGE_MAX);
        int[] answer = tokens(ANSWER_MIN, ANSWER_MAX);
        if (c.history.length + message.length + answer.length > shape.maxTokens()) {
            active.remove(c); // the conversation outgrew the context: the user starts a new one
            return newConversation(index);
        }
        int[] prompt = concat(c.history, message);
        c.history = concat(prompt, answer);
        return new Request(index, Kind.CONVERSATION_TURN, c.name, prompt, answer);
    }

    private Request newConversation(int index) {
        int[] system = systemPrompts[random.nextInt(systemPrompts.length)];
        int[] prompt = concat(system, tokens(MESSAGE_MIN, MESSAGE_MAX));
        int[] answer = tokens(ANSWER_MIN, ANSWER_MAX);
        Conversation c = new Conversation("conversation " + conversationsStarted++, concat(prompt, answer));
        active.add(c);
        return new Request(index, Kind.NEW_CONVERSATION, c.name, prompt, answer);
    }

    private int document() {
        double u = random.nextDouble();
        for (int i = 0; i < documentPopularity.length; i++) {
            if (u < documentPopularity[i]) {
                return i;
            }
        }
        return documentPopularity.length - 1;
    }

    private int[] tokens(int min, int max) {
        int[] t = new int[min + random.nextInt(max - min + 1)];
        for (int i = 0; i < t.length; i++) {
            t[i] = random.nextInt(VOCABULARY);
        }
        return t;
    }

    private static int[] concat(int[] a, int[] b) {
        int[] all = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, all, a.length, b.length);
        return all;
    }
}
