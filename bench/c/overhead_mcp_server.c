/* A stdio MCP server for the client-loop overhead benchmark (issue 11):
 * newline-delimited JSON-RPC 2.0 on stdin/stdout, answered in the order the
 * requests arrive, with three tools:
 *
 *   get_weather {city}   -> "<city>: sunny, 22C"
 *   add {a, b}           -> the sum, as text
 *   echo {text}          -> the text
 *
 * `initialize` answers with the protocol version the client asked for (so any
 * MCP client library connects), `ping` with {}, anything else with a
 * method-not-found error; notifications get no answer. Only what a message
 * needs is read out of it (the top-level `id` and `method`, then the
 * protocol version or the tool's name and arguments): it serves a benchmark,
 * so it is as cheap as a server can be while speaking the protocol.
 * Command-line arguments are ignored (a runner may pass a script path). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Skips one JSON value starting at p (string, number, literal, container);
 * returns the position after it. Not a validator: the input is a client's. */
static const char *skip_value(const char *p) {
    if (*p == '"') {
        for (p++; *p && *p != '"'; p++) {
            if (*p == '\\' && p[1]) p++;
        }
        return *p ? p + 1 : p;
    }
    if (*p == '{' || *p == '[') {
        int depth = 0;
        int in_str = 0;
        for (; *p; p++) {
            if (in_str) {
                if (*p == '\\' && p[1]) p++;
                else if (*p == '"') in_str = 0;
            } else if (*p == '"') {
                in_str = 1;
            } else if (*p == '{' || *p == '[') {
                depth++;
            } else if (*p == '}' || *p == ']') {
                if (--depth == 0) return p + 1;
            }
        }
        return p;
    }
    while (*p && *p != ',' && *p != '}' && *p != ']' && !isspace((unsigned char)*p)) p++;
    return p;
}

static const char *skip_ws(const char *p) {
    while (isspace((unsigned char)*p)) p++;
    return p;
}

/* The value of member `key` of the object that starts at `obj`, or NULL;
 * `*end` gets the position after the value. */
static const char *member(const char *obj, const char *key, const char **end) {
    size_t klen = strlen(key);
    const char *p = skip_ws(obj);
    if (*p != '{') return NULL;
    p = skip_ws(p + 1);
    while (*p == '"') {
        const char *k = p + 1;
        const char *after = skip_value(p);
        int match = (size_t)(after - 1 - k) == klen && memcmp(k, key, klen) == 0;
        p = skip_ws(after);
        if (*p != ':') return NULL;
        p = skip_ws(p + 1);
        const char *v = p;
        const char *vend = skip_value(p);
        if (match) {
            if (end) *end = vend;
            return v;
        }
        p = skip_ws(vend);
        if (*p == ',') p = skip_ws(p + 1);
    }
    return NULL;
}

/* A string member's text (escapes kept as they are: the answer is JSON
 * again) into out; 0 when absent or not a string. */
static int string_member(const char *obj, const char *key, char *out, size_t cap) {
    const char *end;
    const char *v = obj ? member(obj, key, &end) : NULL;
    if (!v || *v != '"' || end - v < 2) return 0;
    size_t n = (size_t)(end - v - 2);
    if (n >= cap) n = cap - 1;
    memcpy(out, v + 1, n);
    out[n] = 0;
    return 1;
}

static const char TOOLS[] =
    "{\"tools\":["
    "{\"name\":\"get_weather\",\"description\":\"The current weather in a city.\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}},\"required\":[\"city\"]}},"
    "{\"name\":\"add\",\"description\":\"Adds two integers.\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"},\"b\":{\"type\":\"integer\"}},"
    "\"required\":[\"a\",\"b\"]}},"
    "{\"name\":\"echo\",\"description\":\"Returns its text.\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"}},\"required\":[\"text\"]}}]}";

static void reply(const char *id, size_t id_len, const char *result) {
    printf("{\"jsonrpc\":\"2.0\",\"id\":%.*s,\"result\":%s}\n", (int)id_len, id, result);
}

static void text_result(const char *id, size_t id_len, const char *text, int is_error) {
    printf("{\"jsonrpc\":\"2.0\",\"id\":%.*s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"%s\"}],"
           "\"isError\":%s}}\n",
           (int)id_len, id, text, is_error ? "true" : "false");
}

static void call_tool(const char *id, size_t id_len, const char *params) {
    char name[64], text[512];
    const char *args = params ? member(params, "arguments", NULL) : NULL;
    if (!string_member(params, "name", name, sizeof name)) {
        text_result(id, id_len, "tools/call without a name", 1);
    } else if (strcmp(name, "get_weather") == 0) {
        char city[256];
        if (!string_member(args, "city", city, sizeof city)) strcpy(city, "somewhere");
        snprintf(text, sizeof text, "%s: sunny, 22C", city);
        text_result(id, id_len, text, 0);
    } else if (strcmp(name, "add") == 0) {
        const char *a = args ? member(args, "a", NULL) : NULL;
        const char *b = args ? member(args, "b", NULL) : NULL;
        if (!a || !b) {
            text_result(id, id_len, "add needs a and b", 1);
        } else {
            snprintf(text, sizeof text, "%lld", strtoll(a, NULL, 10) + strtoll(b, NULL, 10));
            text_result(id, id_len, text, 0);
        }
    } else if (strcmp(name, "echo") == 0) {
        if (!string_member(args, "text", text, sizeof text)) text[0] = 0;
        text_result(id, id_len, text, 0);
    } else {
        snprintf(text, sizeof text, "unknown tool: %.64s", name);
        text_result(id, id_len, text, 1);
    }
}

int main(void) {
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, stdin) > 0) {
        const char *id_end, *method_end;
        const char *id = member(line, "id", &id_end);
        const char *method = member(line, "method", &method_end);
        if (!method || !id) continue; /* a notification, or a response to us */
        size_t id_len = (size_t)(id_end - id);
        const char *params = member(line, "params", NULL);
        size_t mlen = (size_t)(method_end - method);
#define IS(m) (mlen == sizeof(m) + 1 && memcmp(method + 1, m, sizeof(m) - 1) == 0)
        if (IS("initialize")) {
            char version[64];
            if (!string_member(params, "protocolVersion", version, sizeof version)) strcpy(version, "2025-06-18");
            char result[512];
            snprintf(result, sizeof result,
                     "{\"protocolVersion\":\"%s\",\"capabilities\":{\"tools\":{}},"
                     "\"serverInfo\":{\"name\":\"overhead-bench\",\"version\":\"1.0.0\"}}",
                     version);
            reply(id, id_len, result);
        } else if (IS("tools/list")) {
            reply(id, id_len, TOOLS);
        } else if (IS("tools/call")) {
            call_tool(id, id_len, params);
        } else if (IS("ping")) {
            reply(id, id_len, "{}");
        } else {
            printf("{\"jsonrpc\":\"2.0\",\"id\":%.*s,\"error\":{\"code\":-32601,\"message\":\"method not found\"}}\n",
                   (int)id_len, id);
        }
#undef IS
        fflush(stdout);
    }
    free(line);
    return 0;
}
