/* check-apps: proof that weft served a process that ends with _exit.
 *
 * weft writes its WEFT_STATS report from an exit handler, which _exit
 * skips; stress-ng's workers (forked, one per instance) end that way.
 * Preloaded after libweft.so (`LD_PRELOAD=exit_report.so weft run --
 * prog`: weft run puts libweft first), this library's _exit and _Exit
 * append one line with weft's own counters, read in that process at that
 * moment, to the file named by WEFT_EXIT_REPORT:
 *     weft-exit: pid=P status=S active=A threads_created=N
 * then end the process as glibc's would.  weft_get_stats() counts since
 * fork in a child, so a worker's threads_created is the threads weft made
 * in that worker.  Without weft (or an inactive one) the line says
 * active=0.  No libc stdio: this runs at process exit. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <weft.h>

static void report(int status)
{
	int (*active)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "weft_active");
	int (*get)(struct weft_stats *) =
		(int (*)(struct weft_stats *))dlsym(RTLD_DEFAULT, "weft_get_stats");
	const char *path = getenv("WEFT_EXIT_REPORT");
	struct weft_stats s = {0};
	char line[160];
	int n, fd, on;

	if (!path)
		return;
	on = active && active();
	if (on && get)
		get(&s);
	n = snprintf(line, sizeof line, "weft-exit: pid=%d status=%d active=%d threads_created=%lu\n",
		     (int)getpid(), status, on, s.threads_created);
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	if (write(fd, line, (size_t)n) != n) { /* nothing more to do at exit */
	}
	close(fd);
}

void _exit(int status)
{
	report(status);
	for (;;)
		syscall(SYS_exit_group, status);
}

void _Exit(int status)
{
	_exit(status);
}
