/*
 * tinylet test reaper: runs one daemon of the harness (containerd, the registry) as a
 * child subreaper, so every process it leaves behind is reaped.
 *
 * Usage: reaper PIDFILE COMMAND [ARG]...
 *   Starts a new session, marks itself PR_SET_CHILD_SUBREAPER, forks COMMAND, writes
 *   COMMAND's pid to PIDFILE, then reaps children until none are left and exits.
 *
 * Why: on these test machines PID 1 does not reap orphans. containerd's shims daemonize
 * (they are orphaned on purpose) and, when a test tears an instance down with SIGKILL,
 * the shims and container processes would stay zombies forever. Orphans go to the
 * nearest living subreaper instead: this process.
 * Built with `gcc -static -Os -s` by tests/harness/containerd.sh.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: reaper PIDFILE COMMAND [ARG]...\n");
		return 2;
	}
	setsid();
	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) {
		perror("reaper: prctl(PR_SET_CHILD_SUBREAPER)");
		return 1;
	}
	pid_t child = fork();
	if (child < 0) {
		perror("reaper: fork");
		return 1;
	}
	if (child == 0) {
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		execvp(argv[2], argv + 2);
		perror("reaper: exec");
		_exit(127);
	}
	/* The reaper only stops when its children are gone; signals go to the daemon. */
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	FILE *f = fopen(argv[1], "w");
	if (f == NULL || fprintf(f, "%d\n", (int)child) < 0 || fclose(f) != 0) {
		perror("reaper: writing the pid file");
		kill(child, SIGTERM);
	}
	int status = 0, main_status = 0;
	for (;;) {
		pid_t p = waitpid(-1, &status, 0);
		if (p == child)
			main_status = status;
		if (p < 0 && errno == ECHILD)
			break;
	}
	return WIFEXITED(main_status) ? WEXITSTATUS(main_status) : 128 + WTERMSIG(main_status);
}
