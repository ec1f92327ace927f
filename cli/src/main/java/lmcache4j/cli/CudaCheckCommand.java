package lmcache4j.cli;

import java.io.PrintStream;

import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import lmcache4j.bench.gpu.CudaCheck;
import lmcache4j.bench.json.ReportJson;
import lmcache4j.cuda.CudaRuntime;

/**
 * {@code ./lmcache4j cuda-check [--json] [--tokens N] [--runs N]}: runs {@link CudaCheck} on device 0.
 * Progress goes to stderr, the result to stdout. Exit status 0 when every step passed, 1 when one
 * failed, 3 when this machine has no usable CUDA device (the reason is printed), 2 for a usage error.
 */
@Command(name = "cuda-check", description = {"Proves lmcache4j's CUDA paths on this machine's GPU (device 0), each step checked "
        + "against the bytes read back: device, pinned and registered memory, synchronous, asynchronous, strided and memset "
        + "copies, CUDA-pinned host arenas, an IPC handle opened by a second process, error decoding, copy bandwidth, and the "
        + "engine storing a Llama-3-8B-shaped paged KV cache from device memory and retrieving it into another (store and "
        + "retrieve GB/s against one cudaMemcpy of the same bytes). Exit 0: all passed; 1: a step failed; 3: no usable "
        + "CUDA device (the reason is printed)."})
public final class CudaCheckCommand implements CliMain.Command {
    static final int NO_DEVICE = 3;

    private final PrintStream out;
    private final PrintStream err;

    @Option(names = "--json", order = 0, description = "print one JSON object instead of the lines")
    private boolean json;

    private int tokens = 4096;
    private int runs = 3;

    private CudaCheckCommand(PrintStream out, PrintStream err) {
        this.out = out;
        this.err = err;
    }

    @Option(names = "--tokens", paramLabel = "N", order = 1, description = "tokens the engine step stores and retrieves, a "
            + "multiple of 256 (default 4096: 512 MiB of KV; the step holds about 6 times that in device and pinned memory)")
    private void tokens(String value) {
        tokens = OptionValues.intInRange("--tokens", value, 256, 1 << 20);
        if (tokens % 256 != 0) {
            throw new CommandLine.ParameterException(new CommandLine(this), "--tokens must be a multiple of 256, got " + tokens);
        }
    }

    @Option(names = "--runs", paramLabel = "N", order = 2, description = "engine runs per block table (default 3)")
    private void runs(String value) {
        runs = OptionValues.intInRange("--runs", value, 1, 100);
    }

    public static void main(String[] args) {
        CliMain.exit("cuda-check", () -> run(args, System.out, System.err));
    }

    static int run(String[] args, PrintStream out, PrintStream err) {
        return CliMain.execute(new CommandLine(new CudaCheckCommand(out, err)), out, err, args);
    }

    @Override
    public String unmatched(String arg) {
        return arg.startsWith("-") ? CliMain.Command.super.unmatched(arg)
                : "takes no arguments besides its options, got '" + CliText.echo(arg) + "'";
    }

    @Override
    public Integer call() {
        CudaRuntime cuda = CudaRuntime.load();
        CudaCheck.Report report = CudaCheck.run(cuda, tokens, runs, err);
        if (json) {
            out.println(json(report));
        } else if (!report.available()) {
            out.println("cuda-check: no usable CUDA device: " + report.status());
        } else {
            for (CudaCheck.Step step : report.steps()) {
                out.println((step.passed() ? "PASS " : "FAIL ") + step.name() + ": " + step.detail());
            }
            out.println(report.passed() ? "cuda-check: all " + report.steps().size() + " steps passed"
                    : "cuda-check: FAILED");
        }
        if (!report.available()) {
            return NO_DEVICE;
        }
        return report.passed() ? 0 : 1;
    }

    private static String json(CudaCheck.Report report) {
        ReportJson json = new ReportJson().string("status", report.status().toString())
                .bool("available", report.available()).bool("passed", report.passed())
                .objects("steps", report.steps().stream().map(s -> new ReportJson().string("name", s.name())
                        .bool("passed", s.passed()).string("detail", s.detail())).toList());
        if (report.engine() != null) {
            report.engine().addTo(json);
        }
        return json.toString();
    }
}
