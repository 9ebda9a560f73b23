/*
 * tinylet test pause: the process that holds a pod sandbox's namespaces.
 *
 * It sleeps until told to stop. As PID 1 of the pod it must also reap zombies (containers
 * sharing the pod's PID namespace leave orphans behind), and exit promptly and cleanly on
 * SIGTERM/SIGINT so StopPodSandbox does not wait for a SIGKILL timeout.
 * Built with `gcc -static -Os -s` by tests/harness/image.sh; no libc beyond the basics.
 */
#include <signal.h>
#include <stddef.h>
#include <sys/wait.h>
#include <unistd.h>

static void on_stop(int sig)
{
	(void)sig;
	_exit(0);
}

static void on_child(int sig)
{
	(void)sig;
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
}

static int handle(int sig, void (*fn)(int))
{
	struct sigaction sa;
	sa.sa_handler = fn;
	sa.sa_flags = SA_RESTART | (sig == SIGCHLD ? SA_NOCLDSTOP : 0);
	sigemptyset(&sa.sa_mask);
	return sigaction(sig, &sa, NULL);
}

int main(void)
{
	if (handle(SIGTERM, on_stop) || handle(SIGINT, on_stop) || handle(SIGCHLD, on_child))
		return 1;
	for (;;)
		pause();
}
