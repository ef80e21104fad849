/* weft — the launcher.
 *
 *   weft run [--] CMD [ARGS...]   run CMD with libweft preloaded
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

int main(int argc, char **argv)
{
	char lib[PATH_MAX];

	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (strcmp(argv[1], "run") == 0)
		return cmd_run(argc - 2, argv + 2);
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
