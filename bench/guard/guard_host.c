/* The host side of the perf guard (bench/guard/guard.py): small, fixed
 * workloads through the C ABI whose instructions callgrind counts.
 *
 *   guard_host render N           N fresh toolkits of 1,000 declared HTTP
 *                                 tools, the first tn_render of each
 *                                 (counted with --toggle-collect=tn_render)
 *   guard_host exec SKILLS N      one toolkit of SKILLS, N tn_execute of
 *                                 `skill` (--toggle-collect=tn_execute)
 *   guard_host agents N           one agent runtime on an in-process model,
 *                                 one handle woken and waited on N times:
 *                                 N turns of one model call each (the whole
 *                                 process is counted; two N cancel out
 *                                 start-up)
 *   guard_host init MCP URL N     N times: tn_toolkit_build with the stdio
 *                                 MCP server MCP (start, initialize,
 *                                 tools/list), tn_client_new for the
 *                                 provider at URL, its tools rendered,
 *                                 both freed (the whole
 *                                 process is counted; two N cancel out
 *                                 start-up and the first init's one-time
 *                                 work)
 *
 * Every mode checks the answers it gets and exits non-zero when one is
 * wrong, so a guard row never counts a failing path.
 */
#include "toolnexus.h"
#include "../c/bench_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static tn_toolkit *build(const char *cfg) {
    tn_toolkit *tk = NULL;
    char *err = NULL;
    if (tn_toolkit_build(cfg, &tk, &err) != TN_OK) {
        fprintf(stderr, "build failed: %s\n", err ? err : "?");
        tn_string_free(err);
        exit(1);
    }
    return tk;
}

static int render(int n) {
    size_t cap = 1 << 20, len = 0;
    char *cfg = malloc(cap);
    if (!cfg) return 1;
    len += (size_t)snprintf(cfg + len, cap - len, "{\"builtins\":false,\"httpTools\":[");
    for (int i = 0; i < 1000; i++) {
        len += (size_t)snprintf(cfg + len, cap - len,
            "%s{\"name\":\"tool_%04d\",\"description\":\"Benchmark tool %d.\",\"url\":\"http://127.0.0.1:9/x/{id}\","
            "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"id\":{\"type\":\"string\",\"description\":\"Identifier\"},"
            "\"limit\":{\"type\":\"number\"}},\"required\":[\"id\"]}}",
            i ? "," : "", i, i);
    }
    snprintf(cfg + len, cap - len, "]}");
    for (int i = 0; i < n; i++) {
        tn_toolkit *tk = build(cfg);
        char *out = NULL;
        if (tn_render(tk, "openai", &out) != TN_OK || !out || !strstr(out, "tool_0999")) {
            fprintf(stderr, "render failed\n");
            return 1;
        }
        tn_string_free(out);
        tn_toolkit_free(tk);
    }
    free(cfg);
    return 0;
}

static int exec_skill(const char *skills, int n) {
    char cfg[4096];
    snprintf(cfg, sizeof cfg, "{\"skillsDir\":\"%s\"}", skills);
    tn_toolkit *tk = build(cfg);
    for (int i = 0; i < n; i++) {
        char *out = NULL;
        tn_execute(tk, "skill", "{\"name\":\"skill-0500\"}", NULL, &out);
        if (!out || !strstr(out, "\"isError\":false")) {
            fprintf(stderr, "execute failed: %s\n", out ? out : "?");
            return 1;
        }
        tn_string_free(out);
    }
    tn_toolkit_free(tk);
    return 0;
}

static void generate(void *user_data, const char *event_json, tn_reply *reply) {
    (void)user_data;
    (void)event_json;
    tn_reply_set_json(reply, "{\"content\":\"done\",\"usage\":{\"promptTokens\":3,\"completionTokens\":2}}");
}

static int agents(int n) {
    static const char *config =
        "{\"clock\":\"manual\",\"client\":{\"model\":\"local\"},\"agents\":{"
        "\"worker\":{\"does\":\"answers\",\"soul\":\"You answer.\"}}}";
    tn_agents *a = NULL;
    char *err = NULL;
    if (tn_agents_new(config, NULL, generate, NULL, NULL, &a, &err) != TN_OK) {
        fprintf(stderr, "agents: %s\n", err ? err : "?");
        return 1;
    }
    char *out = NULL;
    if (tn_agents_call(a, "spawn", "{\"agent\":\"worker\"}", NULL, &out) != TN_OK || !strstr(out, "root/worker")) {
        fprintf(stderr, "spawn: %s\n", out ? out : "?");
        return 1;
    }
    char id[128];
    const char *start = strstr(out, "root/");
    size_t len = strcspn(start, "\"");
    if (len >= sizeof id) return 1;
    memcpy(id, start, len);
    id[len] = '\0';
    tn_string_free(out);
    char wake[256], wait[256];
    snprintf(wake, sizeof wake, "{\"id\":\"%s\",\"prompt\":\"go\"}", id);
    snprintf(wait, sizeof wait, "{\"id\":\"%s\"}", id);
    for (int i = 0; i < n; i++) {
        out = NULL;
        if (tn_agents_call(a, "wake", wake, NULL, &out) != TN_OK) {
            fprintf(stderr, "wake: %s\n", out ? out : "?");
            return 1;
        }
        tn_string_free(out);
        out = NULL;
        if (tn_agents_call(a, "wait", wait, NULL, &out) != TN_OK || !strstr(out, "\"text\":\"done\"")) {
            fprintf(stderr, "wait: %s\n", out ? out : "?");
            return 1;
        }
        tn_string_free(out);
    }
    tn_agents_free(a);
    return 0;
}

static int init(const char *mcp, const char *url, int n) {
    char tk_json[4096], client_json[1024];
    overhead_configs(mcp, url, tk_json, sizeof tk_json, client_json, sizeof client_json);
    for (int i = 0; i < n; i++) {
        tn_toolkit *tk = build(tk_json);
        tn_client *client = NULL;
        char *err = NULL;
        if (tn_client_new(client_json, &client, &err) != TN_OK) {
            fprintf(stderr, "client: %s\n", err ? err : "?");
            return 1;
        }
        char *tools = NULL;
        if (tn_render(tk, "openai", &tools) != TN_OK || !tools || !strstr(tools, "bench_get_weather")) {
            fprintf(stderr, "init: the MCP server's tools are missing: %s\n", tools ? tools : "?");
            return 1;
        }
        tn_string_free(tools);
        tn_client_free(client);
        tn_toolkit_free(tk);
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "render") == 0) return render(atoi(argv[2]));
    if (argc == 4 && strcmp(argv[1], "exec") == 0) return exec_skill(argv[2], atoi(argv[3]));
    if (argc == 3 && strcmp(argv[1], "agents") == 0) return agents(atoi(argv[2]));
    if (argc == 5 && strcmp(argv[1], "init") == 0) return init(argv[2], argv[3], atoi(argv[4]));
    fprintf(stderr, "usage: %s render N | exec SKILLS N | agents N | init MCP URL N\n", argv[0]);
    return 2;
}
