/* Build options through nothing but include/toolnexus.h (issue 17): a build
 * hung on an MCP server that never answers initialize, cancelled from
 * another thread (TN_CANCELLED, the server reaped, its grandchild gone), a
 * token triggered before the build, and a skillProvider callback whose
 * skills the toolkit renders and executes, one that fails, and the slot
 * errors. Run from the repository root (the server script's path).
 *
 * Exits non-zero on the first failed check; prints "N passed, 0 failed". */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "toolnexus.h"
#include "check.h"

/* Reads "SERVER_PID GRANDCHILD_PID" from path, waiting up to 20 s. */
static int read_pids(const char *path, long *server, long *grandchild) {
    for (int i = 0; i < 1000; i++) {
        FILE *f = fopen(path, "r");
        if (f != NULL) {
            int n = fscanf(f, "%ld %ld", server, grandchild);
            fclose(f);
            if (n == 2) return 1;
        }
        sleep_ms(20);
    }
    return 0;
}

/* Alive: a /proc entry that is not a zombie. */
static int alive(long pid) {
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (f == NULL) return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *paren = strrchr(buf, ')');
    return paren != NULL && paren[1] == ' ' && paren[2] != 'Z' && paren[2] != 'X';
}

static int has_proc_entry(long pid) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld", pid);
    return access(path, F_OK) == 0;
}

struct canceller {
    const char *pid_path;
    tn_cancel *cancel;
};

static void *cancel_when_started(void *arg) {
    struct canceller *c = arg;
    long server, grandchild;
    read_pids(c->pid_path, &server, &grandchild);
    tn_cancel_trigger(c->cancel);
    return NULL;
}

static void test_cancel_a_hung_mcp_build(const char *dir) {
    char pid_path[512], config[2048];
    snprintf(pid_path, sizeof pid_path, "%s/mute.pids", dir);
    snprintf(config, sizeof config,
             "{\"builtins\":false,\"mcpConfig\":{\"mcpServers\":{\"mute\":{\"command\":"
             "[\"python3\",\"tests/mcp_servers/silent_init_pids.py\",\"%s\"],\"timeout\":20000}}}}",
             pid_path);
    tn_build_options *opts = tn_build_options_new();
    tn_cancel *cancel = tn_cancel_new();
    CHECK(tn_build_options_set_cancel(opts, cancel) == TN_OK, "set_cancel");
    struct canceller c = {pid_path, cancel};
    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, cancel_when_started, &c) == 0, "pthread_create");

    tn_toolkit *tk = (tn_toolkit *)1;
    char *err = NULL;
    tn_status st = tn_toolkit_build_with(config, opts, &tk, &err);
    pthread_join(thread, NULL);
    CHECK(st == TN_CANCELLED, "status %d: %s", st, err ? err : "(null)");
    CHECK(tk == NULL, "no toolkit on a cancelled build");
    CHECK(contains(err, "\"code\":\"cancelled\"") && contains(err, "MCP"), "%s", err);
    tn_string_free(err);

    long server = 0, grandchild = 0;
    CHECK(read_pids(pid_path, &server, &grandchild), "the server wrote its pids");
    CHECK(!has_proc_entry(server), "server %ld not reaped by the time the build returned", server);
    int gone = 0;
    for (int i = 0; i < 250 && !gone; i++) {
        gone = !alive(grandchild);
        if (!gone) sleep_ms(20);
    }
    CHECK(gone, "grandchild %ld of the cancelled server still alive", grandchild);

    /* The same options with the token triggered: a build fails at once and
     * starts nothing. */
    char pid_path2[512], config2[2048];
    snprintf(pid_path2, sizeof pid_path2, "%s/never.pids", dir);
    snprintf(config2, sizeof config2,
             "{\"mcpConfig\":{\"mcpServers\":{\"mute\":{\"command\":"
             "[\"python3\",\"tests/mcp_servers/silent_init_pids.py\",\"%s\"]}}}}",
             pid_path2);
    tn_cancel_free(cancel); /* the options keep their own reference */
    st = tn_toolkit_build_with(config2, opts, &tk, &err);
    CHECK(st == TN_CANCELLED && tk == NULL, "status %d", st);
    tn_string_free(err);
    sleep_ms(200);
    CHECK(access(pid_path2, F_OK) != 0, "a cancelled build started a server");

    /* Clearing the token: the next build is a plain one. */
    CHECK(tn_build_options_set_cancel(opts, NULL) == TN_OK, "clear cancel");
    st = tn_toolkit_build_with("{\"builtins\":false}", opts, &tk, &err);
    CHECK(st == TN_OK && tk != NULL && err == NULL, "status %d: %s", st, err ? err : "");
    tn_toolkit_free(tk);
    tn_build_options_free(opts);
}

/* ---- skillProvider ------------------------------------------------------ */

static atomic_int provider_calls, provider_frees;

static void count_free(void *user_data) {
    (void)user_data;
    atomic_fetch_add(&provider_frees, 1);
}

static void provide_skills(void *user_data, const char *event_json, tn_reply *reply) {
    atomic_fetch_add(&provider_calls, 1);
    CHECK(strcmp(event_json, "{}") == 0, "event %s", event_json);
    CHECK(tn_reply_run_data(reply) == NULL, "no run data at build time");
    tn_reply_set_json(reply, (const char *)user_data);
}

static void failing_provider(void *user_data, const char *event_json, tn_reply *reply) {
    (void)user_data;
    (void)event_json;
    tn_reply_set_error(reply, "the skills database is down");
}

static void test_skill_provider(void) {
    static const char skills[] =
        "[{\"name\":\"from-host\",\"description\":\"kept by the host\","
        "\"content\":\"HOST BODY\",\"resources\":[\"guide.md\"]}]";
    tn_build_options *opts = tn_build_options_new();
    char *err = NULL;
    tn_status st = tn_build_options_set_callback(opts, "skillProvider", provide_skills,
                                                 (void *)skills, count_free, &err);
    CHECK(st == TN_OK && err == NULL, "set_callback %d", st);

    /* One options object, two builds: the provider runs once per build. */
    for (int round = 0; round < 2; round++) {
        tn_toolkit *tk = NULL;
        st = tn_toolkit_build_with("{\"builtins\":false}", opts, &tk, &err);
        CHECK(st == TN_OK && tk != NULL, "build %d: %s", st, err ? err : "");
        char *out = NULL;
        CHECK(tn_render(tk, "skillsPrompt", &out) == TN_OK, "render");
        CHECK(contains(out, "from-host") && contains(out, "kept by the host"), "%s", out);
        tn_string_free(out);
        CHECK(tn_execute(tk, "skill", "{\"name\":\"from-host\"}", NULL, &out) == TN_OK, "execute");
        CHECK(contains(out, "HOST BODY") && contains(out, "guide.md") &&
                  contains(out, "\"isError\":false"),
              "%s", out);
        tn_string_free(out);
        tn_toolkit_free(tk);
    }
    CHECK(atomic_load(&provider_calls) == 2, "provider calls %d", atomic_load(&provider_calls));
    CHECK(atomic_load(&provider_frees) == 0, "user_data freed too early");

    /* Replacing the callback releases the old user_data once. */
    st = tn_build_options_set_callback(opts, "skillProvider", failing_provider, NULL, count_free,
                                       NULL);
    CHECK(st == TN_OK, "replace %d", st);
    CHECK(atomic_load(&provider_frees) == 1, "frees %d", atomic_load(&provider_frees));
    tn_toolkit *tk = NULL;
    st = tn_toolkit_build_with(
        "{\"builtins\":false,\"skills\":[{\"name\":\"kept\",\"content\":\"still here\"}]}", opts,
        &tk, &err);
    CHECK(st == TN_OK && tk != NULL, "a failing provider fails no build: %d", st);
    char *out = NULL;
    CHECK(tn_render(tk, "status", &out) == TN_OK, "status");
    CHECK(contains(out, "\"skillProvider\":\"skill provider failed: the skills database is down\""),
          "%s", out);
    tn_string_free(out);
    CHECK(tn_execute(tk, "skill", "{\"name\":\"kept\"}", NULL, &out) == TN_OK, "execute");
    CHECK(contains(out, "still here"), "%s", out);
    tn_string_free(out);
    tn_toolkit_free(tk);

    /* A NULL callback clears the slot (and releases its user_data). */
    st = tn_build_options_set_callback(opts, "skillProvider", NULL, NULL, count_free, NULL);
    CHECK(st == TN_OK, "clear %d", st);
    CHECK(atomic_load(&provider_frees) == 3, "frees %d", atomic_load(&provider_frees));
    st = tn_toolkit_build_with("{\"builtins\":false}", opts, &tk, &err);
    CHECK(st == TN_OK, "build %d", st);
    CHECK(tn_render(tk, "toolNames", &out) == TN_OK && strcmp(out, "[]") == 0, "%s", out);
    tn_string_free(out);
    tn_toolkit_free(tk);

    /* An unknown slot names the known ones and still releases user_data. */
    st = tn_build_options_set_callback(opts, "skillProvidr", provide_skills, NULL, count_free,
                                       &err);
    CHECK(st == TN_INVALID_ARGUMENT, "status %d", st);
    CHECK(contains(err, "skillProvidr") && contains(err, "skillProvider"), "%s", err);
    tn_string_free(err);
    CHECK(atomic_load(&provider_frees) == 4, "frees %d", atomic_load(&provider_frees));

    st = tn_build_options_set_callback(NULL, "skillProvider", provide_skills, NULL, count_free,
                                       &err);
    CHECK(st == TN_NULL_ARGUMENT && contains(err, "opts is NULL"), "%d %s", st, err);
    tn_string_free(err);
    CHECK(atomic_load(&provider_frees) == 5, "frees %d", atomic_load(&provider_frees));
    CHECK(tn_build_options_set_cancel(NULL, NULL) == TN_NULL_ARGUMENT, "set_cancel NULL");

    /* Freeing the options releases the callback set last. */
    st = tn_build_options_set_callback(opts, "skillProvider", provide_skills, (void *)skills,
                                       count_free, NULL);
    CHECK(st == TN_OK, "set %d", st);
    tn_build_options_free(opts);
    CHECK(atomic_load(&provider_frees) == 6, "frees %d", atomic_load(&provider_frees));
    tn_build_options_free(NULL);

    /* NULL options are a plain build. */
    st = tn_toolkit_build_with("{\"builtins\":false}", NULL, &tk, &err);
    CHECK(st == TN_OK && tk != NULL, "NULL opts %d", st);
    tn_toolkit_free(tk);
}

int main(void) {
    char dir[] = "/tmp/tn-build-options-XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    test_cancel_a_hung_mcp_build(dir);
    test_skill_provider();
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    printf("build_options: %d passed, 0 failed\n", passed);
    return 0;
}
