package lmcache4j.engine.config;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

import org.snakeyaml.engine.v2.api.Load;
import org.snakeyaml.engine.v2.api.LoadSettings;
import org.snakeyaml.engine.v2.api.lowlevel.Parse;
import org.snakeyaml.engine.v2.events.CollectionEndEvent;
import org.snakeyaml.engine.v2.events.CollectionStartEvent;
import org.snakeyaml.engine.v2.events.Event;
import org.snakeyaml.engine.v2.exceptions.YamlEngineException;
import org.snakeyaml.engine.v2.schema.CoreSchema;

import lmcache4j.engine.json.Json;

/**
 * Reads an LMCache YAML config file into its top-level {@code key -> value} mapping.
 *
 * <p>Safe by construction: snakeyaml-engine builds only maps, lists and scalars (it has no
 * arbitrary-type construction), duplicate keys are errors, alias expansion is capped, and so are
 * the file's size and its nesting depth ({@value #MAX_DEPTH} levels, as {@code --set} JSON: the
 * composer recurses per level, so a file of ten thousand {@code [} would overflow the stack). The YAML 1.2
 * core schema is used, so {@code true/false} are booleans and {@code yes/no/on/off} stay strings
 * (PyYAML reads those as booleans; lmcache4j then rejects them for boolean fields with a message
 * rather than guess).
 */
final class YamlConfigFile {
    private static final int MAX_FILE_CHARS = 4 * 1024 * 1024;
    /** Deepest nesting of lists and mappings accepted; LMCache's own configs nest two or three levels. */
    static final int MAX_DEPTH = Json.MAX_DEPTH;
    private static final int MAX_ALIASES = 50;

    private YamlConfigFile() {
    }

    /**
     * The file's top-level mapping (empty for an empty file), keys in file order.
     *
     * @throws ConfigException if the file cannot be read, is not YAML, or its top level is not a mapping
     */
    static Map<String, Object> read(Path path) {
        String text;
        try {
            text = Files.readString(path, StandardCharsets.UTF_8);
        } catch (NoSuchFileException e) {
            throw new ConfigException("config file " + path + " does not exist");
        } catch (IOException e) {
            throw new ConfigException("config file " + path + " cannot be read: " + e);
        }
        return parse(text, path.toString());
    }

    /** Parses YAML text; {@code label} names it in errors. */
    static Map<String, Object> parse(String text, String label) {
        if (text.length() > MAX_FILE_CHARS) {
            throw new ConfigException("config file " + label + " is larger than " + MAX_FILE_CHARS + " characters");
        }
        LoadSettings settings = LoadSettings.builder()
                .setLabel(label)
                .setSchema(new CoreSchema())
                .setAllowDuplicateKeys(false)
                .setMaxAliasesForCollections(MAX_ALIASES)
                .setCodePointLimit(MAX_FILE_CHARS)
                .build();
        Object doc;
        try {
            requireDepthAtMost(MAX_DEPTH, settings, text, label);
            doc = new Load(settings).loadFromString(text);
        } catch (YamlEngineException e) {
            throw new ConfigException("config file " + label + " is not valid YAML: " + e.getMessage().strip());
        }
        if (doc == null) {
            return Map.of(); // an empty file (LMCache: `yaml.safe_load(f) or {}`)
        }
        if (!(doc instanceof Map<?, ?> top)) {
            throw new ConfigException("config file " + label + " must be a YAML mapping of key: value at the top "
                    + "level (for example `chunk_size: 256`), but it is " + Json.typeName(doc)
                    + (doc instanceof String ? " \"" + doc + "\"" : ""));
        }
        Map<String, Object> out = new LinkedHashMap<>();
        for (Map.Entry<?, ?> e : top.entrySet()) {
            if (!(e.getKey() instanceof String key)) {
                throw new ConfigException("config file " + label + ": top-level key " + e.getKey()
                        + " is not a name; keys are field names such as chunk_size");
            }
            out.put(key, e.getValue());
        }
        return out;
    }

    /**
     * Walks the parser's events (an iterative state machine, unlike the composer) and refuses the
     * text once lists and mappings nest deeper than {@code max}, before anything recurses.
     */
    private static void requireDepthAtMost(int max, LoadSettings settings, String text, String label) {
        int depth = 0;
        for (Event event : new Parse(settings).parseString(text)) {
            if (event instanceof CollectionStartEvent) {
                if (++depth > max) {
                    throw new ConfigException("config file " + label + " is nested deeper than " + max + " levels (line "
                            + event.getStartMark().map(m -> String.valueOf(m.getLine() + 1)).orElse("?")
                            + "); lmcache4j's config nests a few levels at most");
                }
            } else if (event instanceof CollectionEndEvent) {
                depth--;
            }
        }
    }
}
