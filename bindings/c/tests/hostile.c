/*
 * The library as a hostile world meets it (issue 14): each probe does to a C
 * host what a broken or malicious server, command or file would, with the
 * host's signal handling left at its defaults, and checks that the host is
 * still alive and got an error result naming what happened. One probe runs
 * the library on a host thread with a small stack.
 *
 *   hostile [probe...]   run the named probes (default: all)
 *
 * Run from the repository root (the MCP probes start scripts from
 * tests/mcp_servers). TN_HOSTILE_BUILDS=n changes the number of builds of
 * the loop probes (default 40). Exit status 0 when every probe passed.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "toolnexus.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static long failures;

#define FAIL(...)                                                            \
    do {                                                                     \
        failures++;                                                          \
        fprintf(stderr, "hostile: " __VA_ARGS__);                            \
        fputc('\n', stderr);                                                 \
    } while (0)

#include "mini_http.h"

static int builds(void) {
    const char *s = getenv("TN_HOSTILE_BUILDS");
    int n = s ? atoi(s) : 40;
    return n > 0 ? n : 40;
}

static tn_toolkit *build(const char *config) {
    tn_toolkit *tk = NULL;
    char *err = NULL;
    if (tn_toolkit_build(config, &tk, &err) != TN_OK) {
        FAIL("build refused %s: %s", config, err ? err : "(no error)");
        tn_string_free(err);
        return NULL;
    }
    return tk;
}

/* tn_render(tk, "status") contains want; frees the text. */
static void expect_status(const tn_toolkit *tk, const char *what, const char *want) {
    char *s = NULL;
    if (tn_render(tk, "status", &s) != TN_OK || s == NULL) FAIL("%s: no status", what);
    else if (strstr(s, want) == NULL) FAIL("%s: status %s lacks %s", what, s, want);
    tn_string_free(s);
}

/* tn_execute's ToolResult JSON, or NULL after a FAIL; the caller frees it. */
static char *execute(const tn_toolkit *tk, const char *name, const char *args, const char *ctx) {
    char *out = NULL;
    tn_status st = tn_execute(tk, name, args, ctx, &out);
    if (st != TN_OK || out == NULL) {
        FAIL("%s: status %d: %s", name, st, out ? out : "(null)");
        tn_string_free(out);
        return NULL;
    }
    return out;
}

/* ---- SIGPIPE: a server that is gone, or deaf, before we write ---- */

/* A stdio server that exits at once: initialize is written into a pipe with
 * no reader in about half of the builds. Each build must fail the server,
 * never the build, and never the host. */
static void probe_sigpipe_build(void) {
    const char *config = "{\"builtins\":false,\"mcpConfig\":{\"mcpServers\":"
                         "{\"gone\":{\"command\":[\"/bin/true\"],\"timeout\":5000}}}}";
    for (int i = 0; i < builds(); i++) {
        tn_toolkit *tk = build(config);
        if (tk == NULL) return;
        expect_status(tk, "sigpipe_build", "\"gone\":\"mcp server \\\"gone\\\" failed at initialize: peer-exited (status 0)\"");
        tn_toolkit_free(tk);
    }
}

/* A server that closes its stdin after listing its tools and keeps running:
 * every call writes into a dead pipe and must fail at once (its timeout is a
 * minute) with a broken pipe. */
static void probe_sigpipe_call(void) {
    const char *config = "{\"builtins\":false,\"mcpConfig\":{\"mcpServers\":{\"deaf\":"
                         "{\"command\":[\"python3\",\"tests/mcp_servers/closed_stdin.py\"],"
                         "\"timeout\":60000}}}}";
    const char *want = "{\"output\":\"mcp server \\\"deaf\\\" failed at tools/call: transport "
                       "(send failed: broken pipe (the server closed its stdin))\",\"isError\":true}";
    int n = builds() / 8 > 0 ? builds() / 8 : 1;
    for (int i = 0; i < n; i++) {
        tn_toolkit *tk = build(config);
        if (tk == NULL) return;
        expect_status(tk, "sigpipe_call", "\"deaf\":\"connected\"");
        for (int j = 0; j < 4; j++) {
            char *out = execute(tk, "deaf_ping", "{}", NULL);
            if (out != NULL && strcmp(out, want) != 0) FAIL("sigpipe_call: got %s", out);
            tn_string_free(out);
        }
        tn_toolkit_free(tk);
    }
}

/* ---- a 6,176,768-byte binary preamble before the first message ---- */

static void probe_preamble(void) {
    const char *config = "{\"builtins\":false,\"mcpConfig\":{\"mcpServers\":{\"noisy\":"
                         "{\"command\":[\"python3\",\"tests/mcp_servers/binary_preamble.py\"],"
                         "\"timeout\":10000}}}}";
    tn_toolkit *tk = build(config);
    if (tk == NULL) return;
    expect_status(tk, "preamble", "\"noisy\":\"connected\"");
    char *out = execute(tk, "noisy_ping", "{}", NULL);
    if (out != NULL && strcmp(out, "{\"output\":\"pong\",\"isError\":false}") != 0)
        FAIL("preamble: got %s", out);
    tn_string_free(out);
    tn_toolkit_free(tk);
}

/* ---- bash: unbounded output, a job that outlives its timeout ---- */

static const char *BASH_ONLY = "{\"builtins\":{\"tools\":{\"read\":false}}}";

/* `cat /dev/zero` until its timeout: the host keeps about 1 MiB of it. */
static void probe_bash_output(void) {
    tn_toolkit *tk = build(BASH_ONLY);
    if (tk == NULL) return;
    char *out = execute(tk, "bash", "{\"command\":\"cat /dev/zero\",\"timeout\":1500}", NULL);
    if (out != NULL) {
        size_t n = strlen(out);
        const char *end = "command timed out after 1500ms\",\"isError\":true}";
        if (n > 8 * 1024 * 1024) FAIL("bash_output: %zu bytes of result", n);
        if (n < strlen(end) || strcmp(out + n - strlen(end), end) != 0)
            FAIL("bash_output: the result does not end with the timeout: ...%s", n > 80 ? out + n - 80 : out);
        if (strstr(out, " bytes of stdout dropped; ") == NULL) FAIL("bash_output: no dropped-bytes line");
    }
    tn_string_free(out);
    tn_toolkit_free(tk);
}

static int exists(const char *path) {
    FILE *f = fopen(path, "r");
    if (f != NULL) fclose(f);
    return f != NULL;
}

/* A timeout ends the job, grandchildren included (upstream's orphan probe). */
static void probe_bash_timeout(void) {
    char dir[] = "/tmp/tn-hostile-XXXXXX";
    if (mkdtemp(dir) == NULL) {
        FAIL("bash_timeout: mkdtemp");
        return;
    }
    char marker[128], args[512];
    snprintf(marker, sizeof marker, "%s/orphan", dir);
    snprintf(args, sizeof args,
             "{\"command\":\"sleep 0.2; sh -c 'sleep 1; touch %s'\",\"timeout\":300}", marker);
    tn_toolkit *tk = build(BASH_ONLY);
    if (tk == NULL) return;
    char *out = execute(tk, "bash", args, NULL);
    if (out != NULL && strcmp(out, "{\"output\":\"command timed out after 300ms\",\"isError\":true}") != 0)
        FAIL("bash_timeout: got %s", out);
    tn_string_free(out);
    sleep(2);
    if (exists(marker)) FAIL("bash_timeout: the grandchild outlived the timeout");
    tn_toolkit_free(tk);
    remove(marker);
    rmdir(dir);
}

/* ---- a host that ignores SIGCHLD: the kernel reaps bash's shell ---- */

static void expect_bash(const tn_toolkit *tk, const char *what, const char *args, const char *want) {
    char *out = execute(tk, "bash", args, NULL);
    if (out != NULL && strcmp(out, want) != 0) FAIL("%s: got %s, want %s", what, out, want);
    tn_string_free(out);
}

static void probe_sigchld_ignored(void) {
    struct sigaction old, ign;
    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    sigaction(SIGCHLD, &ign, &old);
    tn_toolkit *tk = build(BASH_ONLY);
    if (tk != NULL) {
        expect_bash(tk, "sigchld exit 3", "{\"command\":\"echo partial; exit 3\"}",
                    "{\"output\":\"partial\\nexit code 3\",\"isError\":true}");
        expect_bash(tk, "sigchld success", "{\"command\":\"echo ok\"}",
                    "{\"output\":\"ok\\n\",\"isError\":false}");
        expect_bash(tk, "sigchld signal", "{\"command\":\"kill -9 $$\"}",
                    "{\"output\":\"exit code 137\",\"isError\":true}");
        expect_bash(tk, "sigchld inner status", "{\"command\":\"sh -c 'exit 5'; echo $?\"}",
                    "{\"output\":\"5\\n\",\"isError\":false}");
        expect_bash(tk, "sigchld timeout", "{\"command\":\"sleep 5\",\"timeout\":300}",
                    "{\"output\":\"command timed out after 300ms\",\"isError\":true}");
        tn_toolkit_free(tk);
    }
    /* The library never changed the host's disposition. */
    struct sigaction now;
    sigaction(SIGCHLD, &old, &now);
    if (now.sa_handler != SIG_IGN) FAIL("sigchld: the host's SIG_IGN was replaced");
}

/* ---- a host thread that blocks signals it takes on another thread ---- */

/* The host blocks SIGTERM and SIGUSR1 on its thread, as a host that takes
 * its signals on one thread does on every other. A command started from it
 * blocks none of them: the shell here is grep itself, reading its own mask
 * (a shell would clear its own mask and hide what it inherited). The host's
 * mask is the same afterwards. */
static void probe_blocked_signals(void) {
    sigset_t block, before, after;
    sigemptyset(&block);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &block, &before);
    pthread_sigmask(SIG_BLOCK, NULL, &before);
    tn_toolkit *tk = build("{\"builtins\":{\"shell\":[\"grep\",\"^SigBlk:\"],"
                           "\"tools\":{\"read\":false}}}");
    if (tk != NULL) {
        expect_bash(tk, "blocked signals", "{\"command\":\"/proc/self/status\"}",
                    "{\"output\":\"SigBlk:\\t0000000000000000\\n\",\"isError\":false}");
        tn_toolkit_free(tk);
    }
    /* A stdio MCP server started from this thread: grep itself (a shell may
     * clear its own mask), which exits 0 when it blocks nothing (started by
     * posix_spawn with its mask cleared, no fork of this process) and 1
     * otherwise; the status names the exit. */
    tk = build("{\"builtins\":false,\"mcpConfig\":{\"mcpServers\":{\"mask\":{\"command\":"
               "[\"grep\",\"-q\",\"^SigBlk:[[:space:]]*0*$\",\"/proc/self/status\"],"
               "\"timeout\":5000}}}}");
    if (tk != NULL) {
        expect_status(tk, "blocked signals, MCP server", "peer-exited (status 0)");
        tn_toolkit_free(tk);
    }
    pthread_sigmask(SIG_BLOCK, NULL, &after);
    if (sigismember(&after, SIGTERM) != 1 || sigismember(&after, SIGUSR1) != 1)
        FAIL("blocked signals: the host thread's mask was changed");
    pthread_sigmask(SIG_UNBLOCK, &block, NULL);
}

/* ---- when a host tool's user_data_free runs ---- */

static int freed_a, freed_b, freed_c;

static void answer_tool(void *user_data, const char *args_json, tn_call *call) {
    (void)args_json;
    tn_call_set_output(call, (const char *)user_data, false);
}

static void free_a(void *user_data) { (void)user_data; freed_a++; }
static void free_b(void *user_data) { (void)user_data; freed_b++; }
static void free_c(void *user_data) { (void)user_data; freed_c++; }

/* Once when the tool is replaced (no call in flight), once at
 * tn_toolkit_free, and at once when registration fails. */
static void probe_user_data_free(void) {
    tn_toolkit *tk = build("{\"builtins\":false}");
    if (tk == NULL) return;
    char *err = NULL;
    if (tn_toolkit_register(tk, "t", NULL, NULL, answer_tool, "first", free_a, &err) != TN_OK)
        FAIL("user_data_free: register: %s", err);
    char *out = execute(tk, "t", "{}", NULL);
    if (out != NULL && strcmp(out, "{\"output\":\"first\",\"isError\":false}") != 0)
        FAIL("user_data_free: got %s", out);
    tn_string_free(out);
    if (freed_a != 0) FAIL("user_data_free: ran while the tool was registered");
    if (tn_toolkit_register(tk, "t", NULL, NULL, answer_tool, "second", free_b, &err) != TN_OK)
        FAIL("user_data_free: re-register: %s", err);
    if (freed_a != 1) FAIL("user_data_free: replacing the tool ran it %d times, want 1", freed_a);
    out = execute(tk, "t", "{}", NULL);
    if (out != NULL && strcmp(out, "{\"output\":\"second\",\"isError\":false}") != 0)
        FAIL("user_data_free: after replacing, got %s", out);
    tn_string_free(out);
    /* A failed registration (empty name) releases its user_data before it returns. */
    if (tn_toolkit_register(tk, "", NULL, NULL, answer_tool, "third", free_c, &err) == TN_OK)
        FAIL("user_data_free: an empty name was registered");
    tn_string_free(err);
    if (freed_c != 1) FAIL("user_data_free: a failed registration ran it %d times, want 1", freed_c);
    if (freed_b != 0) FAIL("user_data_free: the live tool's ran early");
    tn_toolkit_free(tk);
    if (freed_a != 1 || freed_b != 1) FAIL("user_data_free: after free a=%d b=%d, want 1 1", freed_a, freed_b);
}

/* ---- a host thread with a small stack ---- */

/* Build with a stdio MCP server (the official SDK's), call one of its tools
 * and free, all on the thread the host gave; then the same with an HTTP tool
 * against a local server. The library's futures live on the heap, not on
 * that thread's stack (a connect's is tens of KB; an HTTP tool's call needed
 * more than 96 KiB of it until its request future was boxed). */
static void *small_stack_body(void *arg) {
    const struct server *srv = arg;
    const char *config = "{\"builtins\":false,\"mcpConfig\":{\"mcpServers\":{\"sdk\":"
                         "{\"command\":[\"python3\",\"tests/mcp_servers/sdk_server.py\",\"stdio\"],"
                         "\"timeout\":30000}}}}";
    tn_toolkit *tk = build(config);
    if (tk == NULL) return NULL;
    expect_status(tk, "small_stack", "\"sdk\":\"connected\"");
    char *out = execute(tk, "sdk_echo", "{\"text\":\"hi\"}", NULL);
    if (out != NULL && (strstr(out, "hi") == NULL || strstr(out, "\"isError\":false") == NULL))
        FAIL("small_stack: got %s", out);
    tn_string_free(out);
    tn_toolkit_free(tk);

    char http[256];
    snprintf(http, sizeof http,
             "{\"builtins\":false,\"httpTools\":[{\"name\":\"ok_http\",\"url\":\"http://127.0.0.1:%d/ok\"}]}",
             srv->port);
    tk = build(http);
    if (tk == NULL) return NULL;
    out = execute(tk, "ok_http", "{}", NULL);
    if (out != NULL && strstr(out, "fine") == NULL) FAIL("small_stack: the HTTP tool got %s", out);
    tn_string_free(out);
    tn_toolkit_free(tk);
    return NULL;
}

static void probe_small_stack(void) {
    struct server srv;
    if (server_start(&srv) != 0) {
        FAIL("small_stack: no HTTP server");
        return;
    }
    pthread_attr_t attr;
    pthread_t thread;
    pthread_attr_init(&attr);
    /* 64 KiB: one stdio build needed more than that from this thread until
     * the connect future moved into its task (bench/README.md, stop 58). */
    pthread_attr_setstacksize(&attr, 64 * 1024);
    if (pthread_create(&thread, &attr, small_stack_body, &srv) != 0) FAIL("small_stack: no thread");
    else pthread_join(thread, NULL);
    pthread_attr_destroy(&attr);
    server_stop(&srv);
}

struct probe {
    const char *name;
    void (*run)(void);
};

static const struct probe probes[] = {
    {"sigpipe_build", probe_sigpipe_build},
    {"sigpipe_call", probe_sigpipe_call},
    {"preamble", probe_preamble},
    {"bash_output", probe_bash_output},
    {"bash_timeout", probe_bash_timeout},
    {"user_data_free", probe_user_data_free},
    {"blocked_signals", probe_blocked_signals},
    {"small_stack", probe_small_stack},
    /* Last: ignoring SIGCHLD is process-wide, and the probes above start
     * MCP servers whose reaping it would disturb. */
    {"sigchld_ignored", probe_sigchld_ignored},
};

#define NPROBES (sizeof probes / sizeof probes[0])

int main(int argc, char **argv) {
    /* Default handling, whatever the parent left us: a SIGPIPE kills. */
    signal(SIGPIPE, SIG_DFL);
    for (size_t i = 0; i < NPROBES; i++) {
        int wanted = argc < 2;
        for (int a = 1; a < argc; a++) wanted |= strcmp(argv[a], probes[i].name) == 0;
        if (!wanted) continue;
        long before = failures;
        probes[i].run();
        fprintf(stderr, "hostile: %s %s\n", probes[i].name, failures == before ? "ok" : "FAILED");
    }
    if (failures != 0) {
        fprintf(stderr, "hostile: %ld failure(s)\n", failures);
        return 1;
    }
    return 0;
}
