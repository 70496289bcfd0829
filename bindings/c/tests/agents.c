/* The sub-agent runtime through the C ABI (tn_agents_new, tn_agents_call,
 * tn_agents_free): a 3-level tree — root → coordinator → two explorers the
 * coordinator starts through its task tool — on an in-process generate
 * callback, its result and its trace; a wait cancelled from another
 * thread; the manual clock; and the error cases (unknown agent, unknown
 * verb and handle, bad JSON, NULL arguments). */
#include <pthread.h>
#include <stdatomic.h>

#include "toolnexus.h"
#include "check.h"

static atomic_int generate_frees;
static atomic_int generate_calls;

static void count_free(void *user_data) {
    (void)user_data;
    atomic_fetch_add(&generate_frees, 1);
}

/* The model. An explorer answers "found A" or "found B" after its task; the
 * coordinator first delegates both tasks in one turn, then sums up what
 * its task tool brought back. */
static void generate(void *user_data, const char *event_json, tn_reply *reply) {
    (void)user_data;
    atomic_fetch_add(&generate_calls, 1);
    if (contains(event_json, "You explore.")) {
        tn_reply_set_json(reply, contains(event_json, "find A")
                                     ? "{\"content\":\"found A\",\"usage\":{\"promptTokens\":3,\"completionTokens\":2}}"
                                     : "{\"content\":\"found B\",\"usage\":{\"promptTokens\":3,\"completionTokens\":2}}");
        return;
    }
    if (contains(event_json, "You coordinate.")) {
        if (contains(event_json, "\"turn\":0")) {
            tn_reply_set_json(reply,
                              "{\"toolCalls\":["
                              "{\"name\":\"task\",\"arguments\":{\"agent\":\"explore\",\"prompt\":\"find A\"}},"
                              "{\"name\":\"task\",\"arguments\":{\"agent\":\"explore\",\"prompt\":\"find B\"}}],"
                              "\"usage\":{\"promptTokens\":5,\"completionTokens\":5}}");
            return;
        }
        char answer[160];
        snprintf(answer, sizeof answer,
                 "{\"content\":\"summary: %s + %s\",\"usage\":{\"promptTokens\":5,\"completionTokens\":5}}",
                 contains(event_json, "found A") ? "A" : "-", contains(event_json, "found B") ? "B" : "-");
        tn_reply_set_json(reply, answer);
        return;
    }
    tn_reply_set_error(reply, "no such agent in this model");
}

static const char *CONFIG =
    "{\"clock\":\"manual\",\"client\":{\"model\":\"local\"},\"agents\":{"
    "\"coordinator\":{\"does\":\"splits work\",\"soul\":\"You coordinate.\",\"team\":[\"explore\"]},"
    "\"explore\":{\"does\":\"read-only research\",\"soul\":\"You explore.\"}}}";

/* One verb; the answer (the caller frees it) and the status. */
static tn_status call(tn_agents *a, const char *verb, const char *args, const tn_cancel *cancel, char **out) {
    *out = NULL;
    return tn_agents_call(a, verb, args, cancel, out);
}

/* A verb that must succeed; its answer, freed by the caller. */
static char *ok(tn_agents *a, const char *verb, const char *args) {
    char *out = NULL;
    tn_status st = call(a, verb, args, NULL, &out);
    CHECK(st == TN_OK, "%s %s: %d %s", verb, args ? args : "NULL", st, out ? out : "(null)");
    return out;
}

static void test_tree(void) {
    tn_agents *a = NULL;
    char *err = NULL;
    tn_status st = tn_agents_new(CONFIG, NULL, generate, NULL, count_free, &a, &err);
    CHECK(st == TN_OK && a != NULL && err == NULL, "new: %d %s", st, err ? err : "");

    char *out = ok(a, "spawn", "{\"agent\":\"coordinator\"}");
    CHECK(contains(out, "\"id\":\"root/coordinator"), "%s", out);
    char id[128];
    const char *start = strstr(out, "root/");
    size_t n = strcspn(start, "\"");
    CHECK(n < sizeof id, "id length %zu", n);
    memcpy(id, start, n);
    id[n] = '\0';
    tn_string_free(out);

    char args[256];
    snprintf(args, sizeof args, "{\"id\":\"%s\",\"prompt\":\"survey A and B\"}", id);
    tn_string_free(ok(a, "wake", args));
    snprintf(args, sizeof args, "{\"id\":\"%s\"}", id);
    out = ok(a, "wait", args);
    CHECK(contains(out, "\"status\":\"done\""), "%s", out);
    CHECK(contains(out, "\"text\":\"summary: A + B\""), "%s", out);
    CHECK(contains(out, "\"isError\":false"), "%s", out);
    /* Rolled up: the coordinator's two calls (10 each) and each explorer's 5. */
    CHECK(contains(out, "\"totalTokens\":30"), "%s", out);
    tn_string_free(out);
    CHECK(atomic_load(&generate_calls) == 4, "generate calls: %d", atomic_load(&generate_calls));

    out = ok(a, "trace", NULL);
    char line[256];
    snprintf(line, sizeof line, "%s: idle→running (wake)", id);
    CHECK(contains(out, line), "%s", out);
    snprintf(line, sizeof line, "%s/explore", id);
    CHECK(contains(out, line), "an explorer under the coordinator: %s", out);
    CHECK(contains(out, "running→idle (done, turns=2, tokens=30)"), "%s", out);
    tn_string_free(out);

    /* The explorers were closed by the task tool; the coordinator is idle. */
    out = ok(a, "inspect", args);
    CHECK(contains(out, "\"state\":\"idle\"") && contains(out, "\"turns\":2"), "%s", out);
    tn_string_free(out);
    out = ok(a, "list", NULL);
    CHECK(contains(out, "\"state\":\"closed\""), "%s", out);
    tn_string_free(out);
    out = ok(a, "transcript", args);
    CHECK(contains(out, "survey A and B") && contains(out, "found A") && contains(out, "found B"), "%s", out);
    tn_string_free(out);

    /* The manual clock moves when told to. */
    tn_string_free(ok(a, "advance", "{\"ms\":1000}"));
    tn_string_free(ok(a, "close", args));

    tn_agents_free(a);
    /* generate's user_data goes once the last turn thread lets it go. */
    for (int i = 0; i < 500 && atomic_load(&generate_frees) < 1; i++) sleep_ms(10);
    CHECK(atomic_load(&generate_frees) == 1, "frees: %d", atomic_load(&generate_frees));
}

struct waiter {
    tn_agents *agents;
    const tn_cancel *cancel;
    const char *args;
    tn_status status;
    char *out;
    atomic_int done;
};

static void *wait_thread(void *p) {
    struct waiter *w = p;
    w->status = tn_agents_call(w->agents, "wait", w->args, w->cancel, &w->out);
    atomic_store(&w->done, 1);
    return NULL;
}

static void test_cancelled_wait(void) {
    tn_agents *a = NULL;
    char *err = NULL;
    tn_status st = tn_agents_new(CONFIG, NULL, generate, NULL, NULL, &a, &err);
    CHECK(st == TN_OK, "new: %s", err ? err : "");
    char *out = ok(a, "spawn", "{\"agent\":\"explore\"}");
    CHECK(contains(out, "root/explore"), "%s", out);
    tn_string_free(out);
    /* Never woken: the wait blocks until its token is triggered. */
    tn_cancel *cancel = tn_cancel_new();
    struct waiter w = {a, cancel, "{\"id\":\"root/explore.1\"}", -1, NULL, 0};
    pthread_t t;
    CHECK(pthread_create(&t, NULL, wait_thread, &w) == 0, "thread");
    sleep_ms(20);
    tn_cancel_trigger(cancel);
    pthread_join(t, NULL);
    CHECK(w.status == TN_OK && contains(w.out, "\"status\":\"interrupted\""), "%d %s", w.status,
          w.out ? w.out : "(null)");
    tn_string_free(w.out);
    /* A timeout on the manual clock is virtual: it ends when the clock moves. */
    w.cancel = NULL;
    w.args = "{\"id\":\"root/explore.1\",\"timeoutMs\":500}";
    w.out = NULL;
    w.status = -1;
    atomic_store(&w.done, 0);
    CHECK(pthread_create(&t, NULL, wait_thread, &w) == 0, "thread");
    for (int i = 0; i < 500; i++) {
        tn_string_free(ok(a, "advance", "{\"ms\":100}"));
        sleep_ms(2);
        if (atomic_load(&w.done)) break;
    }
    pthread_join(t, NULL);
    CHECK(w.status == TN_OK && contains(w.out, "\"status\":\"timeout\""), "%d %s", w.status,
          w.out ? w.out : "(null)");
    tn_string_free(w.out);
    tn_cancel_free(cancel);
    tn_agents_free(a);
}

static void test_errors(void) {
    tn_agents *a = (tn_agents *)&a; /* written once, to NULL, on failure */
    char *err = NULL;

    /* A failed build frees the user_data at once, and writes NULL. */
    int before = atomic_load(&generate_frees);
    tn_status st = tn_agents_new("{not json", NULL, generate, NULL, count_free, &a, &err);
    CHECK(st == TN_INVALID_JSON && a == NULL && contains(err, "\"code\":\"invalid_json\""), "%d %s", st, err);
    tn_string_free(err);
    CHECK(atomic_load(&generate_frees) == before + 1, "user_data freed on failure");
    st = tn_agents_new("{\"agents\":{\"x\":{\"does\":\"d\",\"team\":[\"ghost\"]}}}", NULL, generate, NULL, NULL, &a,
                       &err);
    CHECK(st == TN_INVALID_CONFIG && a == NULL && contains(err, "ghost"), "%d %s", st, err);
    tn_string_free(err);
    st = tn_agents_new("{\"agents\":{}}", NULL, NULL, NULL, NULL, &a, &err);
    CHECK(st == TN_INVALID_CONFIG && contains(err, "client"), "no model at all: %d %s", st, err);
    tn_string_free(err);
    st = tn_agents_new(NULL, NULL, generate, NULL, NULL, &a, &err);
    CHECK(st == TN_NULL_ARGUMENT && a == NULL, "%d", st);
    tn_string_free(err);
    CHECK(tn_agents_new(CONFIG, NULL, generate, NULL, NULL, NULL, &err) == TN_NULL_ARGUMENT, "NULL out_agents");
    tn_string_free(err);
    CHECK(tn_agents_new(CONFIG, NULL, generate, NULL, NULL, &a, NULL) == TN_NULL_ARGUMENT && a == NULL,
          "NULL out_error");

    st = tn_agents_new(CONFIG, NULL, generate, NULL, NULL, &a, &err);
    CHECK(st == TN_OK, "new: %s", err ? err : "");
    char *out = NULL;
    st = call(a, "spawn", "{\"agent\":\"ghost\"}", NULL, &out);
    CHECK(st == TN_INVALID_ARGUMENT && contains(out, "\"error\"") && contains(out, "ghost"), "%d %s", st, out);
    tn_string_free(out);
    st = call(a, "spawn", "{\"agent\":", NULL, &out);
    CHECK(st == TN_INVALID_JSON && contains(out, "\"code\":\"invalid_json\""), "%d %s", st, out);
    tn_string_free(out);
    st = call(a, "spawn", "[]", NULL, &out);
    CHECK(st == TN_INVALID_ARGUMENT, "%d %s", st, out);
    tn_string_free(out);
    st = call(a, "dance", NULL, NULL, &out);
    CHECK(st == TN_INVALID_ARGUMENT && contains(out, "unknown verb"), "%d %s", st, out);
    tn_string_free(out);
    st = call(a, "wait", "{\"id\":\"root/nobody.9\"}", NULL, &out);
    CHECK(st == TN_INVALID_ARGUMENT && contains(out, "root/nobody.9"), "%d %s", st, out);
    tn_string_free(out);
    st = call(a, "wake", "{\"id\":\"root/nobody.9\"}", NULL, &out);
    CHECK(st == TN_INVALID_ARGUMENT, "%d %s", st, out);
    tn_string_free(out);
    st = call(a, "advance", "{\"ms\":-1}", NULL, &out);
    CHECK(st == TN_INVALID_ARGUMENT, "%d %s", st, out);
    tn_string_free(out);
    st = call(a, NULL, NULL, NULL, &out);
    CHECK(st == TN_NULL_ARGUMENT && contains(out, "verb"), "%d %s", st, out);
    tn_string_free(out);
    st = call(NULL, "list", NULL, NULL, &out);
    CHECK(st == TN_NULL_ARGUMENT && contains(out, "agents"), "%d %s", st, out);
    tn_string_free(out);
    CHECK(tn_agents_call(a, "list", NULL, NULL, NULL) == TN_NULL_ARGUMENT, "NULL out_json");
    tn_agents_free(a);

    /* A runtime on the system clock has no advance. */
    st = tn_agents_new("{\"clock\":\"system\",\"agents\":{\"x\":{\"does\":\"d\"}}}", NULL, generate, NULL, NULL, &a,
                       &err);
    CHECK(st == TN_OK, "new: %s", err ? err : "");
    st = call(a, "advance", "{\"ms\":1}", NULL, &out);
    CHECK(st == TN_INVALID_ARGUMENT && contains(out, "manual"), "%d %s", st, out);
    tn_string_free(out);
    tn_agents_free(a);
    tn_agents_free(NULL);
}

int main(void) {
    test_tree();
    test_cancelled_wait();
    test_errors();
    printf("agents: %d checks passed\n", passed);
    return 0;
}
