/* peak_rss CMD ARGS...: runs CMD, passes its stdout and stderr through, and
 * prints its peak resident set in kB on the last line of stderr as
 * "peak_rss_kb N"; exits with CMD's status.
 *
 * The guard's memory row needs it because Linux keeps a process's peak RSS
 * across exec: a child started from Python starts out with the Python
 * process's peak (about 15 MB) already counted, where one forked from this
 * small program starts with this program's. */
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s CMD [ARGS...]\n", argv[0]);
        return 2;
    }
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return 2;
    }
    if (pid == 0) {
        execvp(argv[1], argv + 1);
        perror("exec");
        _exit(127);
    }
    int status = 0;
    struct rusage usage;
    if (wait4(pid, &status, 0, &usage) < 0) {
        perror("wait4");
        return 2;
    }
    fprintf(stderr, "peak_rss_kb %ld\n", usage.ru_maxrss);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
