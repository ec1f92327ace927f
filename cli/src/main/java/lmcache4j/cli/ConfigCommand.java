package lmcache4j.cli;

import java.io.PrintStream;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import lmcache4j.engine.config.ConfigException;
import lmcache4j.engine.config.ConfigLoader;
import lmcache4j.engine.config.LMCacheEngineConfig;
import lmcache4j.engine.security.DeploymentSecret;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code ./lmcache4j config [--file PATH] [--set key=value ...]}: loads the config exactly as the
 * engine would (file from {@code --file} or {@code LMCACHE_CONFIG_FILE}, then {@code LMCACHE_*}
 * variables, then the {@code --set} overrides) and prints every field as
 * {@code key = value  (source)}. Exit 0 when the config is valid, 2 when it is not (a field, or a
 * {@code deployment_secret_file} the engine could not use) or the arguments are wrong.
 */
@Command(name = "config", description = {
        "Prints lmcache4j's effective config, one `key = value  (source)` line per field and per extra_config entry, then "
                + "exits 0; a bad config prints every problem and exits 2."},
        footer = "Precedence, lowest first: default < file < env (LMCACHE_<FIELD>) < --set.")
public final class ConfigCommand implements CliMain.Command {
    private final PrintStream out;
    private final PrintStream err;
    private final ConfigLoader.Builder loader;

    private ConfigCommand(Map<String, String> env, PrintStream out, PrintStream err) {
        this.out = out;
        this.err = err;
        this.loader = ConfigLoader.builder().environment(env)
                .warnings(w -> err.println("lmcache4j config: warning: " + CliText.escape(w)));
    }

    @Option(names = "--file", paramLabel = "PATH", order = 0,
            description = "the YAML config file (default: $LMCACHE_CONFIG_FILE, else none)")
    private void file(String path) {
        loader.file(Path.of(path));
    }

    @Option(names = "--set", paramLabel = "key=value", order = 1, description = "override a field as code would; the value "
            + "is read like an LMCACHE_* variable (comma lists, JSON for extra_config, empty = unset); may be repeated")
    private void set(String keyValue) {
        int eq = keyValue.indexOf('=');
        if (eq <= 0) {
            throw new IllegalArgumentException("--set takes key=value, got '" + CliText.echo(keyValue) + "'");
        }
        loader.setText(keyValue.substring(0, eq).strip(), keyValue.substring(eq + 1), "--set");
    }

    public static void main(String[] args) {
        CliMain.exit("config", () -> run(List.of(args), System.getenv(), System.out, System.err));
    }

    /** The command without {@link System#exit}: returns the exit status. */
    static int run(List<String> args, Map<String, String> env, PrintStream out, PrintStream err) {
        return CliMain.execute(new CommandLine(new ConfigCommand(env, out, err)), out, err, args.toArray(String[]::new));
    }

    @Override
    public Integer call() {
        LMCacheEngineConfig config;
        try {
            config = loader.build();
        } catch (ConfigException e) {
            // One line per problem, each escaped: a value or key may carry control characters.
            e.getMessage().lines().map(CliText::escape).forEach(line -> err.println("lmcache4j config: " + line.strip()));
            return 2;
        }
        // The one value an engine reads from elsewhere at start: a secret file it cannot use stops it then.
        try {
            config.deploymentSecretFile().ifPresent(f -> DeploymentSecret.fromFile(Path.of(f)));
        } catch (IllegalArgumentException e) {
            err.println("lmcache4j config: deployment_secret_file: " + CliText.escape(e.getMessage()));
            return 2;
        }
        out.println("# lmcache4j effective config; file: "
                + loader.configFile().map(Path::toString).orElse("none")
                + "; precedence: default < file < env < --set");
        config.describe().forEach(out::println);
        return 0;
    }
}
