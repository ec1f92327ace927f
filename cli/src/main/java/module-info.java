/**
 * Every {@code ./lmcache4j} command that runs Java: {@code demo}, {@code server}, {@code keys},
 * {@code config}, {@code report} and {@code bench}: argument parsing, help and exit statuses,
 * and the machine report. The launcher runs {@code lmcache4j.cli.Main}.
 */
module lmcache4j.cli {
    requires lmcache4j.bench;
    requires lmcache4j.server;
    requires lmcache4j.server.mp; // LMCache's multiprocess server
    requires lmcache4j.engine;
    requires lmcache4j.s3; // s3-server: s3proxy for the S3 tier
    requires java.logging; // the demo quiets the engine's INFO logs while it prints its own report
    // demo --model and bench ttft only; the launcher adds the module for those two commands.
    requires static lmcache4j.jlama;
    requires jdk.unsupported; // sun.misc.Signal: server and controller exit 0 after a graceful stop on SIGTERM
    requires info.picocli; // options, help text and usage errors of every command

    opens lmcache4j.cli to info.picocli; // picocli sets the annotated option fields and calls the setters
}
