/* libc inside weft threads: stdio with floats, malloc, ctype (per-thread
   locale tables), strerror (per-thread buffer for unknown numbers),
   strtod, dlopen of a library with TLS (dynamic TLS in threads made
   before and after the dlopen), getaddrinfo from 8 threads at once. */
#include "harness.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <dlfcn.h>
#include <limits.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdint.h>
#include <sys/socket.h>
#include <unistd.h>

#define NT 4

static pthread_barrier_t bar;

/* ------------------------------------------------------------ basic libc */

static void check_malloc(int idx)
{
	static const size_t sizes[] = {1, 15, 16, 24, 100, 1000, 4096, 5000,
				       65536, 200000, 1 << 20};
	unsigned char *p[sizeof sizes / sizeof sizes[0]];
	size_t n = sizeof sizes / sizeof sizes[0];

	for (size_t i = 0; i < n; i++) {
		p[i] = malloc(sizes[i]);
		REQUIRE(p[i], "malloc(%zu) in thread %d returned NULL", sizes[i], idx);
		CHECK_EQ((uintptr_t)p[i] % 16, 0);
		for (size_t k = 0; k < sizes[i]; k++)
			p[i][k] = (unsigned char)(k * 7 + i + idx);
	}
	for (size_t i = 0; i < n; i++) {
		size_t bad = 0;
		for (size_t k = 0; k < sizes[i]; k++)
			bad += p[i][k] != (unsigned char)(k * 7 + i + idx);
		CHECK(bad == 0, "malloc(%zu): %zu bytes changed behind our back",
		      sizes[i], bad);
	}
	/* realloc keeps the contents. */
	unsigned char *r = realloc(p[4], 50000);
	REQUIRE(r, "realloc returned NULL");
	for (size_t k = 0; k < 100; k++)
		if (r[k] != (unsigned char)(k * 7 + 4 + idx)) {
			FAIL("realloc lost byte %zu", k);
			break;
		}
	p[4] = r;
	for (size_t i = 0; i < n; i++)
		free(p[i]);
	int *z = calloc(1000, sizeof *z);
	REQUIRE(z, "calloc returned NULL");
	for (int i = 0; i < 1000; i++)
		if (z[i]) {
			FAIL("calloc: element %d is %d", i, z[i]);
			break;
		}
	free(z);
}

static void *libc_worker(void *arg)
{
	int idx = (int)(intptr_t)arg;
	char buf[128];

	CHECK_WEFT_THREAD();

	/* stdio with floating point */
	snprintf(buf, sizeof buf, "%.3f|%e|%g|%5.1f|%a", 3.14159, 12345.678,
		 0.0001, -2.25, 1.0);
	CHECK(strcmp(buf, "3.142|1.234568e+04|0.0001| -2.2|0x1p+0") == 0,
	      "snprintf of floats: got \"%s\"", buf);
	snprintf(buf, sizeof buf, "%d %s %5.2Lf", idx, "x", (long double)1.5);
	char want[64];
	snprintf(want, sizeof want, "%d x  1.50", idx);
	CHECK(strcmp(buf, want) == 0, "snprintf: expected \"%s\", got \"%s\"",
	      want, buf);
	int n = printf("thread %d prints %.2f\n", idx, 0.5 + idx);
	CHECK_EQ(n, (int)strlen("thread 0 prints 0.50\n"));

	check_malloc(idx);

	/* ctype: the per-thread locale tables must be set up */
	CHECK(isalpha('a') && isalpha('Z'), "isalpha of letters false");
	CHECK(!isalpha('1') && !isalpha(' '), "isalpha of non-letters true");
	CHECK(isdigit('7') && !isdigit('x'), "isdigit wrong");
	CHECK(isspace('\t'), "isspace('\\t') false");
	CHECK_EQ(toupper('q'), 'Q');
	CHECK_EQ(tolower('Q'), 'q');
	CHECK_EQ(toupper('5'), '5');

	/* strtod */
	char *end = NULL;
	double d = strtod("2.5e3", &end);
	CHECK(d == 2500.0, "strtod(\"2.5e3\") = %g", d);
	CHECK(end && *end == 0, "strtod end not at the terminator");
	const char *s2 = "  -0.125xyz";
	d = strtod(s2, &end);
	CHECK(d == -0.125, "strtod(\"%s\") = %g", s2, d);
	CHECK(end == s2 + 8, "strtod end at offset %td, expected 8", end - s2);
	d = strtod("inf", NULL);
	CHECK(isinf(d), "strtod(\"inf\") = %g", d);
	long l = strtol("-12345", NULL, 10);
	CHECK_EQ(l, -12345);

	/* strerror: known numbers, and unknown ones (glibc formats those
	   into a per-thread buffer; every thread keeps its own text). */
	CHECK(strcmp(strerror(EINVAL), "Invalid argument") == 0,
	      "strerror(EINVAL) = \"%s\"", strerror(EINVAL));
	CHECK(strcmp(strerror(ENOENT), "No such file or directory") == 0,
	      "strerror(ENOENT) = \"%s\"", strerror(ENOENT));
	char *u = strerror(10000 + idx);
	pthread_barrier_wait(&bar); /* all threads formatted theirs */
	snprintf(want, sizeof want, "Unknown error %d", 10000 + idx);
	CHECK(strcmp(u, want) == 0, "strerror(%d) = \"%s\", expected \"%s\"",
	      10000 + idx, u, want);
	return (void *)(intptr_t)(idx + 1);
}

/* ---------------------------------------------------------------- dlopen */

struct tlsmod {
	int *(*addr)(void);
	int (*get)(void);
	void (*set)(int);
	char *(*zero)(void);
	void *handle;
	char path[PATH_MAX];
	char err[256];
};
static struct tlsmod mod;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int loaded;
static pthread_barrier_t modbar;

static void *dlopen_worker(void *arg)
{
	(void)arg;
	CHECK_WEFT_THREAD();
	mod.handle = dlopen(mod.path, RTLD_NOW | RTLD_LOCAL);
	if (!mod.handle) {
		snprintf(mod.err, sizeof mod.err, "%s", dlerror());
		return NULL;
	}
	mod.addr = (int *(*)(void))dlsym(mod.handle, "mod_tls_addr");
	mod.get = (int (*)(void))dlsym(mod.handle, "mod_tls_get");
	mod.set = (void (*)(int))dlsym(mod.handle, "mod_tls_set");
	mod.zero = (char *(*)(void))dlsym(mod.handle, "mod_zero_addr");
	return NULL;
}

struct modres {
	int initial, after;
	int *addr;
	int zero_ok, aligned;
};

static void use_mod(int id, struct modres *r)
{
	r->initial = mod.get();
	r->addr = mod.addr();
	char *z = mod.zero();
	r->aligned = (uintptr_t)z % 64 == 0;
	r->zero_ok = 1;
	for (int i = 0; i < 4096; i++)
		if (z[i])
			r->zero_ok = 0;
	mod.set(100 + id);
	memset(z, id + 1, 4096);
	pthread_barrier_wait(&modbar); /* everyone has written */
	r->after = mod.get();
	if (z[4095] != id + 1)
		r->zero_ok = 0;
}

static struct modres modres[3];

/* A thread made before the dlopen: its dynamic TLS block for the module
   is allocated on first use. */
static void *pre_worker(void *arg)
{
	(void)arg;
	CHECK_WEFT_THREAD();
	pthread_mutex_lock(&mu);
	while (!loaded)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	use_mod(0, &modres[0]);
	return NULL;
}

static void *post_worker(void *arg)
{
	(void)arg;
	CHECK_WEFT_THREAD();
	use_mod(1, &modres[1]);
	return NULL;
}

static void test_dlopen(void)
{
	char exe[PATH_MAX - 64];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);

	REQUIRE(n > 0, "readlink(/proc/self/exe) failed: %s", strerror(errno));
	exe[n] = 0;
	*strrchr(exe, '/') = 0; /* build/tests/linked or build/tests/preload */
	snprintf(mod.path, sizeof mod.path, "%s/../libtlsmod.so", exe);

	pthread_t pre, dl, post;
	CHECK_ERR(pthread_barrier_init(&modbar, NULL, 3), 0);
	CHECK_ERR(pthread_create(&pre, NULL, pre_worker, NULL), 0);
	CHECK_ERR(pthread_create(&dl, NULL, dlopen_worker, NULL), 0);
	CHECK_ERR(pthread_join(dl, NULL), 0);
	if (!mod.handle || !mod.addr || !mod.get || !mod.set || !mod.zero) {
		FAIL("dlopen(\"%s\") from a thread: expected a handle and 4 "
		     "symbols, got %p (%s)", mod.path, mod.handle, mod.err);
		exit(1);
	}
	pthread_mutex_lock(&mu);
	loaded = 1;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	CHECK_ERR(pthread_create(&post, NULL, post_worker, NULL), 0);
	use_mod(2, &modres[2]); /* main thread too */
	CHECK_ERR(pthread_join(pre, NULL), 0);
	CHECK_ERR(pthread_join(post, NULL), 0);

	for (int i = 0; i < 3; i++) {
		CHECK_EQ(modres[i].initial, 7);
		CHECK_EQ(modres[i].after, 100 + i);
		CHECK(modres[i].zero_ok, "thread %d: module .tbss not zero or "
		      "not private", i);
		CHECK(modres[i].aligned, "thread %d: module TLS misaligned", i);
		for (int j = 0; j < i; j++)
			CHECK(modres[i].addr != modres[j].addr,
			      "threads %d and %d share the module's TLS at %p", i,
			      j, (void *)modres[i].addr);
	}
	CHECK_EQ(mod.get(), 102);
	pthread_barrier_destroy(&modbar);
	CHECK_EQ(dlclose(mod.handle), 0);
}

/* ----------------------------------------------------------- getaddrinfo */

#define NGAI 8
static pthread_barrier_t gaibar;

static void *gai_worker(void *arg)
{
	int idx = (int)(intptr_t)arg;
	struct addrinfo hints, *res = NULL;

	CHECK_WEFT_THREAD();
	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	pthread_barrier_wait(&gaibar); /* all start together */
	int e = getaddrinfo("localhost", "80", &hints, &res);
	if (e != 0) {
		FAIL("thread %d: getaddrinfo(\"localhost\"): expected 0, got "
		     "%d (%s)", idx, e, gai_strerror(e));
		return NULL;
	}
	int loopback = 0, count = 0;
	for (struct addrinfo *a = res; a; a = a->ai_next) {
		count++;
		if (a->ai_family == AF_INET) {
			struct sockaddr_in *sin = (void *)a->ai_addr;
			CHECK_EQ(ntohs(sin->sin_port), 80);
			loopback += sin->sin_addr.s_addr == htonl(INADDR_LOOPBACK);
		} else if (a->ai_family == AF_INET6) {
			struct sockaddr_in6 *s6 = (void *)a->ai_addr;
			CHECK_EQ(ntohs(s6->sin6_port), 80);
			loopback += IN6_IS_ADDR_LOOPBACK(&s6->sin6_addr);
		}
	}
	CHECK(count > 0 && loopback > 0, "thread %d: localhost resolved to %d "
	      "addresses, %d of them loopback", idx, count, loopback);
	freeaddrinfo(res);
	return (void *)1;
}

int main(void)
{
	pthread_t t[NGAI];

	WEFT_REQUIRE();

	CHECK_ERR(pthread_barrier_init(&bar, NULL, NT), 0);
	for (int i = 0; i < NT; i++)
		CHECK_ERR(pthread_create(&t[i], NULL, libc_worker,
					 (void *)(intptr_t)i), 0);
	for (int i = 0; i < NT; i++) {
		void *r = NULL;
		CHECK_ERR(pthread_join(t[i], &r), 0);
		CHECK_EQ((intptr_t)r, i + 1);
	}
	pthread_barrier_destroy(&bar);
	fflush(stdout);

	test_dlopen();

	CHECK_ERR(pthread_barrier_init(&gaibar, NULL, NGAI), 0);
	for (int i = 0; i < NGAI; i++)
		CHECK_ERR(pthread_create(&t[i], NULL, gai_worker,
					 (void *)(intptr_t)i), 0);
	for (int i = 0; i < NGAI; i++) {
		void *r = NULL;
		CHECK_ERR(pthread_join(t[i], &r), 0);
		CHECK_EQ((intptr_t)r, 1);
	}
	pthread_barrier_destroy(&gaibar);
	TEST_DONE();
}
