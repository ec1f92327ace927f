package lmcache4j.bench.model;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;

/**
 * The model demo's requests, in serving order: prompts that share system prompts, multi-turn
 * conversations (each turn's prompt is the last one, the model's reply and a new message), and
 * documents queried again with other questions. Token ids are drawn from a seed over the model's
 * vocabulary (the ids above the special tokens), so the same seed gives the same prompts.
 */
public final class ModelWorkload {
    /** Where a request's prompt comes from. */
    public enum Kind {
        SYSTEM_PROMPT("shared system prompt"), CONVERSATION("conversation turn"), DOCUMENT("document question");

        private final String label;

        Kind(String label) {
            this.label = label;
        }

        /** What the report calls it. */
        public String label() {
            return label;
        }
    }

    /** One request: its kind, a name that says which prompt it is, and its tokens. */
    public record Request(Kind kind, String name, int[] tokens) {
    }

    /**
     * The sizes of one workload.
     *
     * @param systemPrompts      distinct system prompts
     * @param systemTokens       tokens of each system prompt
     * @param questionsPerPrompt user questions sent after each system prompt
     * @param conversations      conversations
     * @param turns              turns of each conversation
     * @param firstTurnTokens    tokens of a conversation's first prompt
     * @param documents          documents
     * @param documentTokens     tokens of each document
     * @param questionsPerDoc    questions asked about each document
     */
    public record Shape(int systemPrompts, int systemTokens, int questionsPerPrompt, int conversations, int turns,
                        int firstTurnTokens, int documents, int documentTokens, int questionsPerDoc) {
        /** The demo's: about 20 requests of 600 to 2,400 tokens. */
        public static Shape demo() {
            return new Shape(2, 1_024, 3, 2, 3, 600, 1, 2_048, 3);
        }

        /** A small one for tests. */
        public static Shape small() {
            return new Shape(1, 300, 2, 1, 2, 280, 1, 520, 2);
        }
    }

    private static final int FIRST_ID = 3; // after <unk>, <s>, </s>

    private ModelWorkload() {
    }

    /** The requests of {@code shape} over a vocabulary of {@code vocabulary} tokens, interleaved as a server sees them. */
    public static List<Request> requests(Shape shape, int vocabulary, long seed) {
        if (vocabulary <= FIRST_ID + 1) {
            throw new IllegalArgumentException("a vocabulary of " + vocabulary + " tokens is too small");
        }
        SplittableRandom random = new SplittableRandom(seed);
        List<List<Request>> streams = new ArrayList<>();
        for (int s = 0; s < shape.systemPrompts(); s++) {
            int[] system = tokens(random, shape.systemTokens(), vocabulary);
            List<Request> stream = new ArrayList<>();
            for (int q = 0; q < shape.questionsPerPrompt(); q++) {
                stream.add(new Request(Kind.SYSTEM_PROMPT, "system " + s + " question " + q,
                        concat(system, tokens(random, 96 + random.nextInt(64), vocabulary))));
            }
            streams.add(stream);
        }
        for (int c = 0; c < shape.conversations(); c++) {
            int[] prompt = tokens(random, shape.firstTurnTokens(), vocabulary);
            List<Request> stream = new ArrayList<>();
            for (int t = 0; t < shape.turns(); t++) {
                stream.add(new Request(Kind.CONVERSATION, "conversation " + c + " turn " + t, prompt));
                prompt = concat(prompt, tokens(random, 40 + 150 + random.nextInt(40), vocabulary));
            }
            streams.add(stream);
        }
        for (int d = 0; d < shape.documents(); d++) {
            int[] document = tokens(random, shape.documentTokens(), vocabulary);
            List<Request> stream = new ArrayList<>();
            for (int q = 0; q < shape.questionsPerDoc(); q++) {
                stream.add(new Request(Kind.DOCUMENT, "document " + d + " question " + q,
                        concat(document, tokens(random, 64 + random.nextInt(64), vocabulary))));
            }
            streams.add(stream);
        }
        List<Request> out = new ArrayList<>();
        for (int round = 0; ; round++) {
            boolean any = false;
            for (List<Request> stream : streams) {
                if (round < stream.size()) {
                    out.add(stream.get(round));
                    any = true;
                }
            }
            if (!any) {
                return List.copyOf(out);
            }
        }
    }

    private static int[] tokens(SplittableRandom random, int count, int vocabulary) {
        return random.ints(count, FIRST_ID, vocabulary).toArray();
    }

    private static int[] concat(int[] a, int[] b) {
        int[] out = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }
}
