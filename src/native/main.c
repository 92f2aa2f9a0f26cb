/* tinylm: one binary, subcommands sharing flag names and output
 * conventions (docs/architecture.md §11). */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "cpu.h"
#include "hash/blake3.h"

typedef struct command {
  const char *name;
  int (*run)(int argc, char **argv);
  const char *summary;
} command;

static int cmd_version(int argc, char **argv);
static int cmd_help(int argc, char **argv);

static const command commands[] = {
    {"bench", tl_cmd_bench, "prefill and decode speed, beside the bandwidth bound"},
    {"chat", tl_cmd_chat, "an interactive multi-turn conversation"},
    {"convert", tl_cmd_convert,
     "convert a Hugging Face directory to a .slm artifact"},
    {"decode", tl_cmd_decode, "token ids to bytes through an artifact"},
    {"drift", tl_cmd_drift, "has a pulled model's revision moved since?"},
    {"embed", tl_cmd_embed, "one text's vector from an embedding model"},
    {"encode", tl_cmd_encode, "text to token ids through an artifact"},
    {"grammar", tl_cmd_grammar,
     "compile a structured-output grammar (check) or run texts through its mask (match)"},
    {"help", cmd_help, "this list, or one command's usage (help COMMAND)"},
    {"hash", tl_cmd_hash,
     "hash FILE... with SHA-256 or BLAKE3 (sha256sum/b3sum format)"},
    {"inspect", tl_cmd_inspect,
     "what an artifact holds: sections, tensors, config (--verify)"},
    {"observe", tl_cmd_observe,
     "a forward pass as observation records; compare two lanes' (--compare)"},
    {"plan", tl_cmd_plan,
     "write a conformance plan for an artifact (plan init; docs/promotion.md)"},
    {"promote", tl_cmd_promote,
     "run a plan's claims into an evidence store: a promotion receipt"},
    {"pull", tl_cmd_pull,
     "fetch a Hugging Face model at a verified commit (acquisition receipt)"},
    {"receipt", tl_cmd_receipt, "check and print a run receipt (show FILE)"},
    {"render", tl_cmd_render,
     "a conversation through the artifact's chat template"},
    {"report", tl_cmd_report, "one HTML page of a promotion: claims, custody, charts"},
    {"run", tl_cmd_run, "generate from a prompt or a conversation"},
    {"serve", tl_cmd_serve,
     "an OpenAI-compatible HTTP server (chat, completions, streaming)"},
    {"synth", tl_cmd_synth, "write a synthetic Qwen3 checkpoint directory"},
    {"verify", tl_cmd_verify,
     "compare a run with golden vectors; name the first divergence"},
    {"version", cmd_version, "print the version"},
};

static void usage(FILE *to) {
  fprintf(to, "usage: tinylm COMMAND [ARGS]\n\ncommands:\n");
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    fprintf(to, "  %-10s %s\n", commands[i].name, commands[i].summary);
  fprintf(to, "\n`tinylm help COMMAND` (or `tinylm COMMAND --help`) describes "
              "one command.\n");
}

static int cmd_help(int argc, char **argv) {
  if (argc == 1 || strcmp(argv[1], "--help") == 0) {
    usage(stdout);
    return TL_EXIT_OK;
  }
  if (argc == 2)
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
      if (strcmp(argv[1], commands[i].name) == 0) {
        char *args[] = {argv[1], "--help", NULL};
        return commands[i].run(2, args);
      }
  if (argc > 2) return tl_cli_usage(false, "help takes one COMMAND");
  return tl_cli_usage(false, "no command '%s' (tinylm help lists them)", argv[1]);
}

static int cmd_version(int argc, char **argv) {
  if (argc == 2 && strcmp(argv[1], "--help") == 0) {
    puts("usage: tinylm version");
    return TL_EXIT_OK;
  }
  if (argc != 1) return tl_cli_usage(false, "version takes no arguments");
  printf("tinylm %s\n", tl_version());
  return TL_EXIT_OK;
}

static int dispatch(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return TL_EXIT_USAGE;
  }
  if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
    usage(stdout);
    return TL_EXIT_OK;
  }
  if (strcmp(argv[1], "--version") == 0) return cmd_version(1, argv + 1);
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    if (strcmp(argv[1], commands[i].name) == 0)
      return commands[i].run(argc - 1, argv + 1);
  usage(stderr);
  return tl_cli_usage(false, "unknown command '%s'", argv[1]);
}

int main(int argc, char **argv) {
  /* Digests (artifact verification, conversion) use the fastest BLAKE3
   * backend this CPU runs; all give the same bytes. */
  (void)tl_blake3_set_default_backend(tl_native_blake3_backend());
  (void)tl_sha256_set_default_backend(tl_native_sha256_backend());
  /* Every command's output is checked here, once: a failed write to
   * stdout (a full disk, /dev/full, EPIPE with SIGPIPE ignored) is
   * `error: io` and exit 1, never a silent success (cli.h). */
  int rc = tl_cli_finish(dispatch(argc, argv));
  int sig = tl_cli_exit_signal();
  if (sig != 0) {
    signal(sig, SIG_DFL);
    raise(sig);
  }
  return rc;
}
