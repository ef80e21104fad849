/* weft — the launcher.
 *
 *   weft run [--] CMD [ARGS...]   run CMD with libweft preloaded
 *   weft bench [OPTIONS]          weft against glibc on the papers' experiments
 *                                 (runs bench/weft_bench.py of the source tree)
 *   weft info                     version, glibc, host check, tunables
 *   weft version
 *
 * The launcher is itself linked against libweft; the library it preloads
 * is the very file it was linked with (found with dladdr), so an
 * installed weft and a build tree each use their own. */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <weft.h>

static void usage(FILE *f)
{
	fprintf(f, "usage: weft run [--] COMMAND [ARGS...]\n"
		   "       weft bench [--quick] [--out DIR] [--only NAME,...] [--pin both|yes|no]\n"
		   "                  [--reps N] ...   (weft bench --help for all options)\n"
		   "       weft info\n"
		   "       weft version\n");
}

static int library_path(char *out, size_t n)
{
	Dl_info di;
	char real[PATH_MAX];

	if (!dladdr((void *)weft_version, &di) || !di.dli_fname)
		return -1;
	if (!realpath(di.dli_fname, real))
		return -1;
	if (strlen(real) >= n)
		return -1;
	strcpy(out, real);
	return 0;
}

/* Puts libweft first in LD_PRELOAD, keeping what was there. */
static int set_preload(void)
{
	char lib[PATH_MAX], *v;
	const char *old = getenv("LD_PRELOAD");
	size_t n;

	if (library_path(lib, sizeof lib) != 0) {
		fprintf(stderr, "weft: cannot locate libweft.so\n");
		return -1;
	}
	n = strlen(lib) + (old ? strlen(old) : 0) + 2;
	v = malloc(n);
	if (!v)
		return -1;
	snprintf(v, n, "%s%s%s", lib, old && *old ? ":" : "", old ? old : "");
	setenv("LD_PRELOAD", v, 1);
	free(v);
	return 0;
}

static int cmd_run(int argc, char **argv)
{
	int i = 0;

	if (i < argc && strcmp(argv[i], "--") == 0)
		i++;
	if (i >= argc) {
		fprintf(stderr, "weft run: no command given\n");
		usage(stderr);
		return 2;
	}
	if (set_preload() != 0)
		return 127;
	execvp(argv[i], argv + i);
	fprintf(stderr, "weft run: %s: %s\n", argv[i], strerror(errno));
	return errno == ENOENT ? 127 : 126;
}

/* The benchmark driver lives in the source tree next to the programs it
 * builds: $WEFT_BENCH_DIR, else bench/ beside the directory of this
 * executable (bin/weft in a build tree). */
static int bench_driver(char *out, size_t n)
{
	const char *dir = getenv("WEFT_BENCH_DIR");
	char exe[PATH_MAX], *slash;
	ssize_t len;

	if (dir && *dir) {
		snprintf(out, n, "%s/weft_bench.py", dir);
	} else {
		len = readlink("/proc/self/exe", exe, sizeof exe - 1);
		if (len < 0)
			return -1;
		exe[len] = '\0';
		slash = strrchr(exe, '/');
		if (!slash)
			return -1;
		*slash = '\0';
		if ((size_t)snprintf(out, n, "%s/../bench/weft_bench.py", exe) >= n)
			return -1;
	}
	return access(out, R_OK);
}

/* weft bench ARGS: python3 DRIVER --weft-lib <this launcher's libweft> ARGS,
 * so the library measured is the one `weft run` would preload. */
static int cmd_bench(int argc, char **argv)
{
	char driver[PATH_MAX], lib[PATH_MAX];
	char **av;
	int i;

	if (bench_driver(driver, sizeof driver) != 0) {
		fprintf(stderr, "weft bench: cannot find bench/weft_bench.py; it runs from "
				"weft's source tree (set WEFT_BENCH_DIR to its bench folder)\n");
		return 2;
	}
	if (library_path(lib, sizeof lib) != 0) {
		fprintf(stderr, "weft: cannot locate libweft.so\n");
		return 2;
	}
	av = calloc((size_t)argc + 5, sizeof *av);
	if (!av)
		return 2;
	av[0] = "python3";
	av[1] = driver;
	av[2] = "--weft-lib";
	av[3] = lib;
	for (i = 0; i < argc; i++)
		av[4 + i] = argv[i];
	execvp(av[0], av);
	fprintf(stderr, "weft bench: python3: %s (the driver needs python3)\n", strerror(errno));
	return errno == ENOENT ? 127 : 126;
}

int main(int argc, char **argv)
{
	char lib[PATH_MAX];

	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (strcmp(argv[1], "run") == 0)
		return cmd_run(argc - 2, argv + 2);
	if (strcmp(argv[1], "bench") == 0)
		return cmd_bench(argc - 2, argv + 2);
	if (strcmp(argv[1], "info") == 0) {
		weft_print_info(1);
		if (library_path(lib, sizeof lib) == 0)
			printf("library: %s\n", lib);
		return 0;
	}
	if (strcmp(argv[1], "version") == 0 || strcmp(argv[1], "--version") == 0) {
		printf("weft %s\n", weft_version());
		return 0;
	}
	if (strcmp(argv[1], "help") == 0 || strcmp(argv[1], "--help") == 0) {
		usage(stdout);
		return 0;
	}
	fprintf(stderr, "weft: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
