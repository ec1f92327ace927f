package lmcache4j.bench.model;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.github.tjake.jlama.model.AbstractModel;
import com.github.tjake.jlama.model.ModelSupport;
import com.github.tjake.jlama.safetensors.DType;

import lmcache4j.jlama.SyntheticLlama;

/**
 * The model the demo and {@code bench ttft} run: a Hugging Face model directory the user names, or
 * lmcache4j's synthetic Llama ({@link SyntheticLlama#demo()}), written on first use under
 * {@code $XDG_CACHE_HOME/lmcache4j} (else {@code ~/.cache/lmcache4j}) and reused after.
 *
 * @param directory the model directory
 * @param name      the name the cache keys carry
 * @param synthetic whether it is the synthetic model
 */
public record ModelSource(Path directory, String name, boolean synthetic) {
    /** The user's directory, or the synthetic model's (written now if missing). */
    public static ModelSource resolve(Optional<Path> userDirectory) {
        return resolve(userDirectory, SyntheticLlama.demo(), "synthetic-llama-256x4");
    }

    /** The user's directory, or the synthetic model {@code synthetic} under {@code name} (written now if missing). */
    public static ModelSource resolve(Optional<Path> userDirectory, SyntheticLlama synthetic, String name) {
        if (userDirectory.isPresent()) {
            Path dir = userDirectory.get().toAbsolutePath().normalize();
            if (!Files.exists(dir)) {
                throw new IllegalArgumentException("--model " + dir + " does not exist; name a Hugging Face model directory "
                        + "(config.json, tokenizer.json, *.safetensors), or leave DIR out for the synthetic model");
            }
            if (!Files.isDirectory(dir)) {
                throw new IllegalArgumentException("--model " + dir + " is a file; name the model's directory");
            }
            if (!Files.isRegularFile(dir.resolve("config.json"))) {
                throw new IllegalArgumentException("--model " + dir + " is not a Hugging Face model directory (no config.json)");
            }
            return new ModelSource(dir, dir.getFileName().toString(), false);
        }
        String cache = System.getenv("XDG_CACHE_HOME");
        Path root = cache != null && !cache.isBlank() ? Path.of(cache) : Path.of(System.getProperty("user.home"), ".cache");
        Path dir = root.resolve("lmcache4j").resolve(name);
        try {
            synthetic.writeTo(dir);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write the synthetic model into " + dir + ": " + e.getMessage(), e);
        }
        return new ModelSource(dir, "lmcache4j/" + name, true);
    }

    /**
     * Loads it with F32 working memory (Jlama's KV is then F32).
     *
     * @throws IllegalArgumentException when Jlama cannot load the directory, saying why in one line
     */
    public AbstractModel load() {
        try {
            return ModelSupport.loadModel(directory.toFile(), DType.F32, DType.F32);
        } catch (RuntimeException e) {
            throw new IllegalArgumentException("--model " + directory + ": Jlama cannot load it: " + why(e), e);
        }
    }

    /**
     * What made a load fail, in one line: the first line of the innermost message (Jackson's second
     * line says where in the file: kept as "line L, column C"), without the class names Jlama's
     * wrappers put in front.
     */
    static String why(Throwable e) {
        Throwable root = e;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        String message = root.getMessage() == null ? "" : root.getMessage();
        String first = message.lines().findFirst().orElse("").replaceAll("^([a-z][\\w$]*\\.)+[A-Z][\\w$]*(Exception|Error): ", "")
                .strip();
        Matcher where = Pattern.compile("line: (\\d+), column: (\\d+)").matcher(message);
        return (first.isEmpty() ? root.getClass().getSimpleName() : first)
                + (where.find() ? " (line " + where.group(1) + ", column " + where.group(2) + ")" : "");
    }
}
