package lmcache4j.engine.remote.fs;

/**
 * How LMCache's FS connector turns a key string into a file name: {@code /} (from model names
 * such as {@code meta-llama/Llama-3.1-8B}) is replaced, then {@code .data} appended.
 */
public enum FileNaming {
    /**
     * Current LMCache ({@code fs_connector.py::_get_file_name}:
     * {@code key.to_string().replace("/", "-SEP-") + ".data"}). Reversible as long as the model
     * name does not itself contain {@code -SEP-}.
     */
    SEP("-SEP-"),
    /**
     * Older LMCache releases ({@code key.to_string().replace("/", "-") + ".data"}). Not
     * reversible: model names commonly contain {@code -} already, so {@code /} cannot be told
     * back from it.
     */
    DASH("-");

    /** The file name suffix of a stored chunk. */
    public static final String SUFFIX = ".data";
    /** The suffix of a temporary file next to the final one (Python's {@code with_suffix(".tmp")}). */
    public static final String TMP_SUFFIX = ".tmp";

    private final String slashReplacement;

    FileNaming(String slashReplacement) {
        this.slashReplacement = slashReplacement;
    }

    /** What {@code /} becomes in a file name. */
    public String slashReplacement() {
        return slashReplacement;
    }

    /** The file name stem (no suffix) for a key string. */
    public String stem(String keyString) {
        return keyString.replace("/", slashReplacement);
    }

    /** The file name for a key string: stem + {@value #SUFFIX}. */
    public String fileName(String keyString) {
        return stem(keyString) + SUFFIX;
    }

    /** Whether {@link #keyString} can recover key strings from stems. */
    public boolean isReversible() {
        return this == SEP;
    }

    /**
     * The key string a stem was made from.
     *
     * @throws UnsupportedOperationException for {@link #DASH}, which is not reversible
     */
    public String keyString(String stem) {
        if (!isReversible()) {
            throw new UnsupportedOperationException("file names made with " + this + " naming ('/' -> '"
                    + slashReplacement + "') cannot be turned back into keys: '-' in model names is ambiguous");
        }
        return stem.replace(slashReplacement, "/");
    }
}
