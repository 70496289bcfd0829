/* The sub-agent runtime through the C ABI (tn_agents_new, tn_agents_call,
 * tn_agents_free): a 3-level tree — root → coordinator → two explorers the
 * coordinator starts through its task tool — on an in-process generate
 * callback, its result and its trace; a wait cancelled from another
 * thread; the manual clock; the error cases (unknown agent, unknown
 * verb and handle, bad JSON, NULL arguments); and the runtime freed while
 * calls use it (a reference-counted handle): from another thread while a
 * resume waits for its turn, and from inside its own generate callback; the
 * host callbacks of tn_agents_set_callback (onSpawn, onClose, onMetric, a
 * verify judge, a guardrail, summarize and countTokens for compaction) and
 * a callback that never answers, cancelled by an interrupt; a runtime on a
 * SQLite store ("store"), read back by a second runtime; and a tree
 * parked on a relay tool's call, freed, and resumed by a second runtime on
 * the same store to the result of an uninterrupted run. Run plain, under
 * ASan+UBSan and under valgrind. */
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

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
    /* Every advance must succeed; how many it takes depends on timing, so
     * they are checked once, together (the count of checks stays fixed). */
    int advances = 0, advanced = 0;
    for (int i = 0; i < 500; i++) {
        char *out = NULL;
        advances++;
        advanced += call(a, "advance", "{\"ms\":100}", NULL, &out) == TN_OK;
        tn_string_free(out);
        sleep_ms(2);
        if (atomic_load(&w.done)) break;
    }
    CHECK(advanced == advances, "advance failed %d of %d times", advances - advanced, advances);
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

/* ---- the runtime freed while calls use it ------------------------------ */

/* A host tool that always suspends (SPEC §10): the asker's turn parks with
 * a pending approval, so `resume` has a turn to replay. The resumed turn's
 * first model call is made while the `resume` call is in flight — the
 * host's proof that a call holds the runtime when it frees it. */
static void ask(void *user_data, const char *args_json, tn_call *c) {
    (void)user_data;
    (void)args_json;
    tn_call_set_result_json(c, "{\"output\":\"approve?\",\"isError\":true,\"metadata\":{\"pending\":"
                               "{\"id\":\"r1\",\"kind\":\"approval\",\"prompt\":\"approve?\"}}}");
}

static const char *ASK_CONFIG = "{\"clock\":\"manual\",\"client\":{\"model\":\"local\"},\"agents\":{"
                                "\"asker\":{\"does\":\"asks first\",\"soul\":\"You ask.\",\"tools\":[\"ask\"]}}}";

enum free_from { FREE_IN_CALLBACK, FREE_FROM_MAIN };

/* The model of the free tests: its first call asks for the tool; the
 * resumed turn's call frees the runtime itself, or tells the main thread
 * and holds until the main thread has freed it. */
struct freeing_model {
    enum free_from how;
    tn_agents *agents;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int calls;
    int in_resumed_call; /* the resumed turn's model call has begun */
    int freed;           /* the runtime has been freed */
    atomic_int user_data_frees;
    atomic_int freed_before_user_data_free;
};

static void freeing_model_free(void *user_data) {
    struct freeing_model *m = user_data;
    pthread_mutex_lock(&m->mu);
    if (m->freed) atomic_store(&m->freed_before_user_data_free, 1);
    pthread_mutex_unlock(&m->mu);
    atomic_fetch_add(&m->user_data_frees, 1);
}

static void freeing_generate(void *user_data, const char *event_json, tn_reply *reply) {
    (void)event_json;
    struct freeing_model *m = user_data;
    pthread_mutex_lock(&m->mu);
    int n = m->calls++;
    pthread_mutex_unlock(&m->mu);
    if (n == 0) {
        tn_reply_set_json(reply, "{\"toolCalls\":[{\"name\":\"ask\",\"arguments\":{}}]}");
        return;
    }
    if (n == 1) {
        if (m->how == FREE_IN_CALLBACK) {
            tn_agents_free(m->agents);
            pthread_mutex_lock(&m->mu);
            m->freed = 1;
            pthread_mutex_unlock(&m->mu);
        } else {
            pthread_mutex_lock(&m->mu);
            m->in_resumed_call = 1;
            pthread_cond_broadcast(&m->cv);
            while (!m->freed) pthread_cond_wait(&m->cv, &m->mu);
            pthread_mutex_unlock(&m->mu);
        }
    }
    tn_reply_set_json(reply, "{\"content\":\"answered after the free\"}");
}

struct resumer {
    tn_agents *agents;
    tn_status status;
    char *out;
};

static void *resume_thread(void *p) {
    struct resumer *r = p;
    r->status = tn_agents_call(r->agents, "resume", "{\"answer\":{\"ok\":true}}", NULL, &r->out);
    return NULL;
}

/* Builds the asker's runtime on `m` and parks the asker: its wait answers
 * pending. The toolkit is freed at once (the runtime holds its own). */
static void park_asker(struct freeing_model *m) {
    tn_toolkit *tk = NULL;
    char *err = NULL;
    tn_status st = tn_toolkit_build("{\"builtins\":false}", &tk, &err);
    CHECK(st == TN_OK, "%d %s", st, err);
    st = tn_toolkit_register(tk, "ask", "asks the host", NULL, ask, NULL, NULL, &err);
    CHECK(st == TN_OK, "%d %s", st, err);
    st = tn_agents_new(ASK_CONFIG, tk, freeing_generate, m, freeing_model_free, &m->agents, &err);
    CHECK(st == TN_OK, "new: %s", err ? err : "");
    tn_toolkit_free(tk);
    tn_agents *a = m->agents;
    tn_string_free(ok(a, "spawn", "{\"agent\":\"asker\"}"));
    tn_string_free(ok(a, "wake", "{\"id\":\"root/asker.1\",\"prompt\":\"go\"}"));
    char *out = ok(a, "wait", "{\"id\":\"root/asker.1\"}");
    CHECK(contains(out, "\"status\":\"pending\"") && contains(out, "approve?"), "%s", out);
    tn_string_free(out);
}

/* The result of a resume whose runtime was freed under it: the replayed
 * turn was cancelled, so the tree ends interrupted or closed. */
static void check_freed_resume(tn_status st, const char *out) {
    CHECK(st == TN_OK, "resume: %d %s", st, out ? out : "(null)");
    CHECK(contains(out, "\"status\":\"interrupted\"") || contains(out, "\"status\":\"closed\""), "%s", out);
    CHECK(!contains(out, "answered after the free"), "a freed runtime's turn is not stored as done: %s", out);
}

/* The runtime freed from inside its own generate callback, while the
 * host's `resume` call waits for that turn. */
static void test_free_inside_generate(void) {
    static struct freeing_model m = {.how = FREE_IN_CALLBACK,
                                     .mu = PTHREAD_MUTEX_INITIALIZER,
                                     .cv = PTHREAD_COND_INITIALIZER};
    park_asker(&m);
    char *out = NULL;
    tn_status st = call(m.agents, "resume", "{\"answer\":{\"ok\":true}}", NULL, &out);
    check_freed_resume(st, out);
    tn_string_free(out);
    /* The turn thread lets the callback's user_data go once it has ended. */
    for (int i = 0; i < 3000 && atomic_load(&m.user_data_frees) < 1; i++) sleep_ms(10);
    pthread_mutex_lock(&m.mu);
    CHECK(m.freed == 1 && m.calls == 2, "freed in the resumed turn's call: calls %d", m.calls);
    pthread_mutex_unlock(&m.mu);
    CHECK(atomic_load(&m.user_data_frees) == 1, "user_data_free ran once: %d", atomic_load(&m.user_data_frees));
    CHECK(atomic_load(&m.freed_before_user_data_free) == 1, "user_data_free after the free");
}

/* The runtime freed by the main thread while another thread's `resume`
 * waits for a turn whose model call is still running. */
static void test_free_from_another_thread(void) {
    static struct freeing_model m = {.how = FREE_FROM_MAIN,
                                     .mu = PTHREAD_MUTEX_INITIALIZER,
                                     .cv = PTHREAD_COND_INITIALIZER};
    park_asker(&m);
    struct resumer r = {m.agents, -1, NULL};
    pthread_t t;
    CHECK(pthread_create(&t, NULL, resume_thread, &r) == 0, "thread");
    pthread_mutex_lock(&m.mu);
    while (!m.in_resumed_call) pthread_cond_wait(&m.cv, &m.mu);
    pthread_mutex_unlock(&m.mu);
    /* resume is in flight (its turn is in the model call): free now. */
    tn_agents_free(m.agents);
    /* The resume ends without the model's answer: the free cancelled its
     * turn. It holds the memory until it returns. */
    pthread_join(t, NULL);
    check_freed_resume(r.status, r.out);
    tn_string_free(r.out);
    /* The model call still runs and still has its user_data. */
    CHECK(atomic_load(&m.user_data_frees) == 0, "user_data freed while its callback runs");
    pthread_mutex_lock(&m.mu);
    m.freed = 1;
    pthread_cond_broadcast(&m.cv);
    pthread_mutex_unlock(&m.mu);
    for (int i = 0; i < 3000 && atomic_load(&m.user_data_frees) < 1; i++) sleep_ms(10);
    CHECK(atomic_load(&m.user_data_frees) == 1, "user_data_free ran once: %d", atomic_load(&m.user_data_frees));
}

/* ---- host callbacks (tn_agents_set_callback) ---------------------------- */

static atomic_int spawned, closed_count, metrics, verifies, guards, summaries, counts;

static void on_spawn(void *user_data, const char *event_json, tn_reply *reply) {
    (void)user_data;
    (void)reply;
    if (contains(event_json, "\"id\":\"root/coder.1\"")) atomic_fetch_add(&spawned, 1);
}

static void on_close(void *user_data, const char *event_json, tn_reply *reply) {
    (void)user_data;
    (void)reply;
    if (contains(event_json, "\"reason\":\"closed\"")) atomic_fetch_add(&closed_count, 1);
}

static void on_metric(void *user_data, const char *event_json, tn_reply *reply) {
    (void)user_data;
    (void)event_json;
    (void)reply;
    atomic_fetch_add(&metrics, 1);
}

/* The completion gate's judge: the first attempt does not verify. */
static void verify(void *user_data, const char *event_json, tn_reply *reply) {
    (void)user_data;
    CHECK(contains(event_json, "\"toolCalls\""), "verify sees the RunResult: %s", event_json);
    if (atomic_fetch_add(&verifies, 1) == 0) {
        tn_reply_set_json(reply, "{\"ok\":false,\"reason\":\"no tests\"}");
    } else {
        tn_reply_set_json(reply, "{\"ok\":true}");
    }
}

/* A guardrail: no shouting. */
static void guardrail(void *user_data, const char *event_json, tn_reply *reply) {
    (void)user_data;
    atomic_fetch_add(&guards, 1);
    if (contains(event_json, "\"name\":\"shout\"")) tn_reply_set_json(reply, "\"no shouting\"");
}

static void shout(void *user_data, const char *args_json, tn_call *c) {
    (void)user_data;
    (void)args_json;
    tn_call_set_result_json(c, "{\"output\":\"HI\"}");
}

/* The coder: shouts first, then reports; the retry after a failed
 * verification says so. */
static void coder_generate(void *user_data, const char *event_json, tn_reply *reply) {
    (void)user_data;
    if (contains(event_json, "Your work did not verify: no tests. Fix it and finish.")) {
        tn_reply_set_json(reply, "{\"content\":\"done with tests\"}");
    } else if (contains(event_json, "denied: no shouting")) {
        tn_reply_set_json(reply, "{\"content\":\"done\"}");
    } else {
        tn_reply_set_json(reply, "{\"toolCalls\":[{\"name\":\"shout\",\"arguments\":{}}]}");
    }
}

static void set(tn_agents *a, const char *slot, tn_callback f) {
    char *err = NULL;
    tn_status st = tn_agents_set_callback(a, slot, f, NULL, NULL, &err);
    CHECK(st == TN_OK && err == NULL, "set %s: %d %s", slot, st, err ? err : "");
}

static void test_callbacks(void) {
    tn_toolkit *tk = NULL;
    char *err = NULL;
    tn_status st = tn_toolkit_build("{\"builtins\":false}", &tk, &err);
    CHECK(st == TN_OK, "%d %s", st, err);
    st = tn_toolkit_register(tk, "shout", "shouts", NULL, shout, NULL, NULL, &err);
    CHECK(st == TN_OK, "%d %s", st, err);
    tn_agents *a = NULL;
    st = tn_agents_new("{\"clock\":\"manual\",\"callbacks\":[\"onMetric\",\"guardrail:coder\"],\"agents\":{"
                       "\"coder\":{\"does\":\"codes\",\"tools\":[\"shout\"],"
                       "\"completion\":{\"verify\":\"callback\",\"maxAttempts\":2}}}}",
                       tk, coder_generate, NULL, NULL, &a, &err);
    CHECK(st == TN_OK, "new: %s", err ? err : "");
    tn_toolkit_free(tk);
    set(a, "onSpawn", on_spawn);
    set(a, "onClose", on_close);
    set(a, "onMetric", on_metric);
    set(a, "verify:coder", verify);
    set(a, "guardrail:coder", guardrail);
    /* A slot the runtime does not have is refused, naming those it has. */
    st = tn_agents_set_callback(a, "summarize", verify, NULL, NULL, &err);
    CHECK(st == TN_INVALID_ARGUMENT && contains(err, "verify:coder") && contains(err, "onMetric"), "%d %s", st,
          err);
    tn_string_free(err);
    err = NULL;

    tn_string_free(ok(a, "spawn", "{\"agent\":\"coder\"}"));
    tn_string_free(ok(a, "wake", "{\"id\":\"root/coder.1\",\"prompt\":\"write it\"}"));
    char *out = ok(a, "wait", "{\"id\":\"root/coder.1\"}");
    CHECK(contains(out, "\"status\":\"done\"") && contains(out, "\"text\":\"done with tests\""), "%s", out);
    tn_string_free(out);
    out = ok(a, "transcript", "{\"id\":\"root/coder.1\"}");
    CHECK(contains(out, "denied: no shouting"), "the guardrail's denial is the tool result: %s", out);
    tn_string_free(out);
    CHECK(atomic_load(&verifies) == 2, "verify calls: %d", atomic_load(&verifies));
    CHECK(atomic_load(&guards) == 1, "guardrail calls: %d", atomic_load(&guards));
    CHECK(atomic_load(&spawned) == 1, "onSpawn: %d", atomic_load(&spawned));
    CHECK(atomic_load(&metrics) > 0, "onMetric: %d", atomic_load(&metrics));
    tn_string_free(ok(a, "close", "{\"id\":\"root/coder.1\"}"));
    CHECK(atomic_load(&closed_count) == 1, "onClose: %d", atomic_load(&closed_count));
    tn_agents_free(a);
}

/* Compaction with the host's summarize and countTokens. */
static void summarize(void *user_data, const char *event_json, tn_reply *reply) {
    (void)user_data;
    CHECK(contains(event_json, "\"older\"") && contains(event_json, "first question"), "%s", event_json);
    atomic_fetch_add(&summaries, 1);
    tn_reply_set_json(reply, "\"HOST-SUMMARY\"");
}

static void count_tokens(void *user_data, const char *event_json, tn_reply *reply) {
    (void)user_data;
    (void)event_json;
    atomic_fetch_add(&counts, 1);
    tn_reply_set_json(reply, "1000");
}

static void echo_generate(void *user_data, const char *event_json, tn_reply *reply) {
    (void)user_data;
    tn_reply_set_json(reply, contains(event_json, "[Summary of earlier conversation]\\nHOST-SUMMARY")
                                 ? "{\"content\":\"saw the summary\"}"
                                 : "{\"content\":\"plain\"}");
}

static void test_compaction_callbacks(void) {
    tn_agents *a = NULL;
    char *err = NULL;
    tn_status st = tn_agents_new("{\"clock\":\"manual\",\"callbacks\":[\"summarize\",\"countTokens\"],"
                                 "\"compaction\":{\"maxTokens\":100},\"agents\":{\"ava\":{\"does\":\"talks\"}}}",
                                 NULL, echo_generate, NULL, NULL, &a, &err);
    CHECK(st == TN_OK, "new: %s", err ? err : "");
    set(a, "summarize", summarize);
    set(a, "countTokens", count_tokens);
    tn_string_free(ok(a, "spawn", "{\"agent\":\"ava\"}"));
    /* countTokens says 1000 against maxTokens 100: the transcript is
     * compacted before the call (with no later user turn to keep as the
     * tail, all of it is summarized), and the model sees the summary. */
    tn_string_free(ok(a, "wake", "{\"id\":\"root/ava.1\",\"prompt\":\"first question\"}"));
    char *out = ok(a, "wait", "{\"id\":\"root/ava.1\"}");
    CHECK(contains(out, "\"text\":\"saw the summary\""), "%s", out);
    tn_string_free(out);
    CHECK(atomic_load(&summaries) == 1 && atomic_load(&counts) > 0, "summarize %d, countTokens %d",
          atomic_load(&summaries), atomic_load(&counts));
    /* Compaction without the host's summarize is refused at the build. */
    tn_agents *b = NULL;
    st = tn_agents_new("{\"compaction\":{\"maxTokens\":100},\"agents\":{}}", NULL, echo_generate, NULL, NULL, &b,
                       &err);
    CHECK(st == TN_INVALID_CONFIG && contains(err, "summarize"), "%d %s", st, err);
    tn_string_free(err);
    tn_agents_free(a);
}

/* A callback that never answers: the guardrail holds until it is told
 * nobody waits any more; an interrupt ends the turn meanwhile. */
static atomic_int hung_in, hung_out;

static void hung_guardrail(void *user_data, const char *event_json, tn_reply *reply) {
    (void)user_data;
    (void)event_json;
    atomic_fetch_add(&hung_in, 1);
    for (int i = 0; i < 3000 && !tn_reply_cancelled(reply); i++) sleep_ms(5);
    CHECK(tn_reply_cancelled(reply), "the hung callback was told nobody waits");
    atomic_fetch_add(&hung_out, 1);
}

static void test_hung_callback_interrupted(void) {
    tn_toolkit *tk = NULL;
    char *err = NULL;
    tn_status st = tn_toolkit_build("{\"builtins\":false}", &tk, &err);
    CHECK(st == TN_OK, "%d %s", st, err);
    st = tn_toolkit_register(tk, "shout", "shouts", NULL, shout, NULL, NULL, &err);
    CHECK(st == TN_OK, "%d %s", st, err);
    tn_agents *a = NULL;
    st = tn_agents_new("{\"clock\":\"manual\",\"callbacks\":[\"guardrail:coder\"],\"agents\":{"
                       "\"coder\":{\"does\":\"codes\",\"tools\":[\"shout\"]}}}",
                       tk, coder_generate, NULL, NULL, &a, &err);
    CHECK(st == TN_OK, "new: %s", err ? err : "");
    tn_toolkit_free(tk);
    set(a, "guardrail:coder", hung_guardrail);
    tn_string_free(ok(a, "spawn", "{\"agent\":\"coder\"}"));
    tn_string_free(ok(a, "post", "{\"id\":\"root/coder.1\",\"item\":{\"from\":\"root\",\"channel\":\"peer\",\"text\":\"keep me\"}}"));
    tn_string_free(ok(a, "wake", "{\"id\":\"root/coder.1\",\"prompt\":\"write it\"}"));
    for (int i = 0; i < 3000 && atomic_load(&hung_in) == 0; i++) sleep_ms(2);
    CHECK(atomic_load(&hung_in) == 1, "the guardrail was called");
    tn_string_free(ok(a, "interrupt", "{\"id\":\"root/coder.1\"}"));
    char *out = ok(a, "wait", "{\"id\":\"root/coder.1\"}");
    CHECK(contains(out, "\"status\":\"interrupted\""), "%s", out);
    tn_string_free(out);
    out = ok(a, "inspect", "{\"id\":\"root/coder.1\"}");
    CHECK(contains(out, "\"state\":\"idle\"") && contains(out, "\"inbox\":1"), "inbox intact: %s", out);
    tn_string_free(out);
    for (int i = 0; i < 3000 && atomic_load(&hung_out) == 0; i++) sleep_ms(2);
    CHECK(atomic_load(&hung_out) == 1, "the hung callback returned");
    tn_agents_free(a);
}

/* Removes the temporary directory `dir` of a SQLite store `dir/agents.db`
 * (the database and its WAL files). */
static void remove_store(const char *dir) {
    const char *files[] = {"agents.db", "agents.db-wal", "agents.db-shm"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char path[256];
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        remove(path);
    }
    CHECK(rmdir(dir) == 0, "rmdir %s: %s", dir, strerror(errno));
}

/* A runtime on a SQLite store ("store" in the config): an explorer's
 * transcript is in the file once the runtime is freed, and a second
 * runtime on the same file reads it for the handle of the same id. */
static void test_store(void) {
    char dir[] = "/tmp/tn-agents-store-XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    char config[512];
    snprintf(config, sizeof config,
             "{\"client\":{\"model\":\"local\"},\"store\":\"sqlite:%s/agents.db\",\"agents\":{"
             "\"explore\":{\"does\":\"read-only research\",\"soul\":\"You explore.\"}}}",
             dir);
    for (int run = 0; run < 2; run++) {
        tn_agents *a = NULL;
        char *err = NULL;
        tn_status st = tn_agents_new(config, NULL, generate, NULL, NULL, &a, &err);
        CHECK(st == TN_OK, "new: %d %s", st, err ? err : "");
        char *out = ok(a, "spawn", "{\"agent\":\"explore\"}");
        CHECK(contains(out, "\"id\":\"root/explore.1\""), "%s", out);
        tn_string_free(out);
        if (run == 0) {
            tn_string_free(ok(a, "wake", "{\"id\":\"root/explore.1\",\"prompt\":\"find A\"}"));
            out = ok(a, "wait", "{\"id\":\"root/explore.1\"}");
            CHECK(contains(out, "\"text\":\"found A\""), "%s", out);
            tn_string_free(out);
        } else {
            out = ok(a, "transcript", "{\"id\":\"root/explore.1\"}");
            CHECK(contains(out, "\"content\":\"find A\"") && contains(out, "\"content\":\"found A\""),
                  "the first runtime's transcript: %s", out);
            tn_string_free(out);
        }
        tn_agents_free(a);
    }
    remove_store(dir);
}

/* ---- a restart on the store (issue 26) ---------------------------------- */

/* The parent delegates to the asker, whose relay tool `check` halts the
 * run until the host answers it; then each sums up what came back. */
static void restart_generate(void *user_data, const char *event_json, tn_reply *reply) {
    (void)user_data;
    const char *usage = "\"usage\":{\"promptTokens\":3,\"completionTokens\":2}";
    char out[256];
    if (contains(event_json, "You ask.")) {
        if (contains(event_json, "secret-token"))
            snprintf(out, sizeof out, "{\"content\":\"asker-done: secret-token\",%s}", usage);
        else
            snprintf(out, sizeof out, "{\"toolCalls\":[{\"name\":\"check\",\"arguments\":{}}],%s}", usage);
    } else if (contains(event_json, "asker-done: secret-token")) {
        snprintf(out, sizeof out, "{\"content\":\"parent-final: asker-done: secret-token\",%s}", usage);
    } else {
        snprintf(out, sizeof out,
                 "{\"toolCalls\":[{\"name\":\"task\",\"arguments\":{\"agent\":\"asker\",\"prompt\":\"get it\"}}],%s}",
                 usage);
    }
    tn_reply_set_json(reply, out);
}

/* A runtime of the restart's agents, on `store` (NULL: none). */
static tn_agents *restart_runtime(const char *store) {
    char config[768];
    snprintf(config, sizeof config,
             "{\"client\":{\"model\":\"local\"},%s%s%s\"agents\":{"
             "\"parent\":{\"does\":\"delegates\",\"soul\":\"You delegate.\",\"team\":[\"asker\"]},"
             "\"asker\":{\"does\":\"asks first\",\"soul\":\"You ask.\",\"tools\":[\"check\"]}}}",
             store ? "\"store\":\"" : "", store ? store : "", store ? "\"," : "");
    tn_toolkit *tk = NULL;
    char *err = NULL;
    tn_status st = tn_toolkit_build("{\"builtins\":false,\"relayTools\":[{\"name\":\"check\"}]}", &tk, &err);
    CHECK(st == TN_OK, "toolkit: %d %s", st, err ? err : "");
    tn_agents *a = NULL;
    st = tn_agents_new(config, tk, restart_generate, NULL, NULL, &a, &err);
    CHECK(st == TN_OK, "new: %d %s", st, err ? err : "");
    tn_toolkit_free(tk);
    return a;
}

/* Spawns the parent and runs it until the tree parks on the relay call. */
static void park_parent(tn_agents *a) {
    char *out = ok(a, "spawn", "{\"agent\":\"parent\"}");
    CHECK(contains(out, "\"id\":\"root/parent.1\""), "%s", out);
    tn_string_free(out);
    tn_string_free(ok(a, "wake", "{\"id\":\"root/parent.1\",\"prompt\":\"go\"}"));
    out = ok(a, "wait", "{\"id\":\"root/parent.1\"}");
    CHECK(contains(out, "\"status\":\"pending\"") && contains(out, "\"kind\":\"tool_call\""), "%s", out);
    tn_string_free(out);
}

static const char *ANSWER = "{\"answer\":{\"ok\":true,\"data\":{\"output\":\"secret-token\"}}}";

/* Runtime 1 parks the tree on a SQLite store and is freed; runtime 2 on the
 * same store lists it suspended and resumes it to the result an
 * uninterrupted run gives, its task call reattaching to the same asker. */
static void test_restart(void) {
    tn_agents *once = restart_runtime(NULL);
    park_parent(once);
    char *want = ok(once, "resume", ANSWER);
    CHECK(contains(want, "\"status\":\"done\"") && contains(want, "parent-final: asker-done: secret-token"), "%s",
          want);
    tn_agents_free(once);

    char dir[] = "/tmp/tn-agents-restart-XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    char store[128];
    snprintf(store, sizeof store, "sqlite:%s/agents.db", dir);
    tn_agents *first = restart_runtime(store);
    park_parent(first);
    tn_agents_free(first);

    tn_agents *again = restart_runtime(store);
    char *out = ok(again, "list", NULL);
    CHECK(contains(out, "\"id\":\"root/parent.1\",\"state\":\"suspended\"") &&
              contains(out, "\"id\":\"root/parent.1/asker.1\",\"state\":\"suspended\"") &&
              contains(out, "\"pendingKind\":\"tool_call\""),
          "the parked tree: %s", out);
    tn_string_free(out);
    out = ok(again, "resume", ANSWER);
    CHECK(strcmp(out, want) == 0, "the same result as without the restart:\n%s\n%s", out, want);
    tn_string_free(out);
    out = ok(again, "list", NULL);
    CHECK(!contains(out, "asker.2"), "no second spawn: %s", out);
    tn_string_free(out);
    out = ok(again, "trace", NULL);
    CHECK(contains(out, "root/parent.1: task replay → REATTACH to root/parent.1/asker.1 (state idle)"), "%s", out);
    tn_string_free(out);
    tn_agents_free(again);
    tn_string_free(want);

    tn_agents *after = restart_runtime(store);
    tn_status st = call(after, "resume", ANSWER, NULL, &out);
    CHECK(st != TN_OK && out && contains(out, "no suspended handle"), "nothing left: %d %s", st, out ? out : "(null)");
    tn_string_free(out);
    tn_agents_free(after);

    remove_store(dir);
}

int main(void) {
    test_callbacks();
    test_compaction_callbacks();
    test_hung_callback_interrupted();
    test_tree();
    test_cancelled_wait();
    test_errors();
    test_free_inside_generate();
    test_free_from_another_thread();
    test_store();
    test_restart();
    printf("agents: %d checks passed\n", passed);
    return 0;
}
