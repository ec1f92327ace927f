package lmcache4j.cli;

import java.io.PrintStream;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import lmcache4j.engine.config.ConfigException;
import lmcache4j.engine.config.ConfigLoader;
import lmcache4j.engine.config.LMCacheEngineConfig;

/**
 * {@code ./lmcache4j config [--file PATH] [--set key=value ...]}: loads the config exactly as the
 * engine would (file from {@code --file} or {@code LMCACHE_CONFIG_FILE}, then {@code LMCACHE_*}
 * variables, then the {@code --set} overrides) and prints every field as
 * {@code key = value  (source)}. Exit 0 when the config is valid, 2 when it is not or the
 * arguments are wrong.
 */
public final class ConfigCommand {
    static final String USAGE = """
            usage: ./lmcache4j config [--file PATH] [--set key=value ...]
            Prints lmcache4j's effective config, one `key = value  (source)` line per field and per
            extra_config entry, then exits 0; a bad config prints every problem and exits 2.
              --file PATH       the YAML config file (default: $LMCACHE_CONFIG_FILE, else none)
              --set key=value   override a field as code would; the value is read like an
                                LMCACHE_* variable (comma lists, JSON for extra_config, empty = unset)
            Precedence, lowest first: default < file < env (LMCACHE_<FIELD>) < --set.""";

    private ConfigCommand() {
    }

    public static void main(String[] args) {
        CliMain.exit("config", () -> run(List.of(args), System.getenv(), System.out, System.err));
    }

    /** The command without {@link System#exit}: returns the exit status. */
    static int run(List<String> args, Map<String, String> env, PrintStream out, PrintStream err) {
        ConfigLoader.Builder loader = ConfigLoader.builder().environment(env)
                .warnings(w -> err.println("lmcache4j config: warning: " + CliText.escape(w)));
        for (int i = 0; i < args.size(); i++) {
            String a = args.get(i);
            String value;
            if (a.equals("-h") || a.equals("--help")) {
                out.println(USAGE);
                return 0;
            } else if (a.equals("--file") || a.equals("--set")) {
                if (i + 1 >= args.size()) {
                    return usageError(err, a + " needs a value");
                }
                value = args.get(++i);
            } else if (a.startsWith("--file=") || a.startsWith("--set=")) {
                value = a.substring(a.indexOf('=') + 1);
                a = a.substring(0, a.indexOf('='));
            } else {
                return usageError(err, "unexpected argument '" + CliText.echo(a) + "'");
            }
            if (a.equals("--file")) {
                loader.file(Path.of(value));
            } else {
                int eq = value.indexOf('=');
                if (eq <= 0) {
                    return usageError(err, "--set takes key=value, got '" + CliText.echo(value) + "'");
                }
                loader.setText(value.substring(0, eq).strip(), value.substring(eq + 1), "--set");
            }
        }
        LMCacheEngineConfig config;
        try {
            config = loader.build();
        } catch (ConfigException e) {
            // One line per problem, each escaped: a value or key may carry control characters.
            e.getMessage().lines().map(CliText::escape).forEach(line -> err.println("lmcache4j config: " + line.strip()));
            return 2;
        }
        out.println("# lmcache4j effective config; file: "
                + loader.configFile().map(Path::toString).orElse("none")
                + "; precedence: default < file < env < --set");
        config.describe().forEach(out::println);
        return 0;
    }

    private static int usageError(PrintStream err, String why) {
        return CliMain.usageError(err, "config", why);
    }
}
