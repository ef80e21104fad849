/* Thread-specific data (pthread_key_*).

   A key is an index into a table of {sequence, destructor}.  The
   sequence is odd while the key exists and advances on create and on
   delete, so a value stored under a deleted key (and a reused index) is
   recognised as stale without touching every thread: each per-thread
   value records the sequence it was stored under.

   Keys live in chunks of 256 allocated on demand and never freed, so a
   lookup needs no lock.  A thread's first 32 values are inline in its
   descriptor; later ones in blocks of 32 allocated on first use. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lock.h"
#include "thread.h"
#include "tsd.h"

#define KEYS_PER_CHUNK 256u
#define KEY_CHUNKS 4096u /* 1,048,576 keys; PTHREAD_KEYS_MAX is 1024 */
#define DESTRUCTOR_ITERATIONS 4 /* PTHREAD_DESTRUCTOR_ITERATIONS */

/* The first chunk is static, so that the inline lookup of the common
   keys (tsd.h) needs no chunk pointer. */
struct weft_tsd_key weft_tsd_keys0[KEYS_PER_CHUNK];
/* The values of keys below WEFT_TSD_INLINE (tsd.h). */
__thread struct weft_tsd_value weft_tsd_inline[WEFT_TSD_INLINE]
	__attribute__((tls_model("initial-exec")));
#define key weft_tsd_key

/* Chunk 0 is weft_tsd_keys0, never read from here: left zero, the
   32 KiB table is .bss rather than .data, which would put it between
   the few words every process writes at load (issue 16). */
static struct key *key_chunks[KEY_CHUNKS];
static unsigned nkeys; /* indexes ever handed out */
static unsigned free_hint;
static weft_lock_t key_lock = WEFT_LOCK_INIT;

static struct key *key_at(unsigned k)
{
	struct key *c;

	if (k < KEYS_PER_CHUNK)
		return &weft_tsd_keys0[k];
	if (k / KEYS_PER_CHUNK >= KEY_CHUNKS)
		return NULL;
	c = __atomic_load_n(&key_chunks[k / KEYS_PER_CHUNK], __ATOMIC_ACQUIRE);
	return c ? &c[k % KEYS_PER_CHUNK] : NULL;
}

static int key_live(const struct key *k, uintptr_t *seq)
{
	*seq = k ? __atomic_load_n(&k->seq, __ATOMIC_ACQUIRE) : 0;
	return *seq & 1;
}

int tsd_key_create(pthread_key_t *out, void (*destr)(void *))
{
	struct key *k = NULL;
	unsigned i;

	weft_lock(&key_lock);
	/* Reuse a deleted index first, starting where the last search left. */
	for (i = 0; i < nkeys; i++) {
		unsigned j = (free_hint + i) % nkeys;

		if (!(key_at(j)->seq & 1)) {
			k = key_at(j);
			i = j;
			break;
		}
	}
	if (!k) {
		i = nkeys;
		if (i / KEYS_PER_CHUNK >= KEY_CHUNKS) {
			weft_unlock(&key_lock);
			return EAGAIN;
		}
		if (i >= KEYS_PER_CHUNK && !key_chunks[i / KEYS_PER_CHUNK]) {
			struct key *c = calloc(KEYS_PER_CHUNK, sizeof *c);

			if (!c) {
				weft_unlock(&key_lock);
				return EAGAIN;
			}
			__atomic_store_n(&key_chunks[i / KEYS_PER_CHUNK], c,
					 __ATOMIC_RELEASE);
		}
		k = key_at(i);
		nkeys++;
	}
	k->destr = destr;
	__atomic_store_n(&k->seq, k->seq + 1, __ATOMIC_RELEASE);
	free_hint = i + 1;
	weft_unlock(&key_lock);
	*out = i;
	return 0;
}

/* --------------------------------------------- keys made during start-up

   A key created while weft starts is glibc's: start-up can call malloc
   (the loader's error strings, glibc's pthread_create for the probe), a
   malloc like jemalloc then initialises itself and creates its key, and
   weft, not serving yet, forwards.  Once weft serves, the program uses
   that number with weft's pthread_setspecific, which did not know it
   ("<jemalloc>: Error setting tsd.").  So such keys are recorded here and
   taken over under the same numbers, with their destructors and the
   starting thread's values, when start-up ends.  Only start-up's own
   reentrant calls land here: a handful at most, hence the small array
   (more would stay glibc's, as before). */
#define STARTUP_KEYS 32

static struct {
	pthread_key_t key;
	void (*destr)(void *);
} startup_keys[STARTUP_KEYS];
static unsigned nstartup_keys;

void tsd_note_startup_key(pthread_key_t key, void (*destr)(void *))
{
	weft_lock(&key_lock); /* other threads may be starting too */
	if (nstartup_keys < STARTUP_KEYS && key < KEYS_PER_CHUNK) {
		startup_keys[nstartup_keys].key = key;
		startup_keys[nstartup_keys].destr = destr;
		nstartup_keys++;
	}
	weft_unlock(&key_lock);
}

/* Makes index `i` (in the static first chunk) a live key. */
static int key_claim(unsigned i, void (*destr)(void *))
{
	struct key *k = key_at(i);
	int err = EBUSY;

	weft_lock(&key_lock);
	if (!(k->seq & 1)) {
		if (i >= nkeys)
			nkeys = i + 1; /* the indexes below stay free for reuse */
		k->destr = destr;
		__atomic_store_n(&k->seq, k->seq + 1, __ATOMIC_RELEASE);
		err = 0;
	}
	weft_unlock(&key_lock);
	return err;
}

void tsd_adopt_startup_keys(void *(*glibc_get)(pthread_key_t))
{
	for (unsigned n = 0; n < nstartup_keys; n++) {
		pthread_key_t key = startup_keys[n].key;
		void *v;

		if (key_claim(key, startup_keys[n].destr) != 0)
			continue;
		v = glibc_get(key);
		if (v)
			tsd_set(key, v);
	}
	nstartup_keys = 0;
}

int tsd_key_delete(pthread_key_t key)
{
	struct key *k = key < nkeys ? key_at(key) : NULL;
	uintptr_t seq;
	int err = EINVAL;

	weft_lock(&key_lock);
	if (key_live(k, &seq)) {
		__atomic_store_n(&k->seq, seq + 1, __ATOMIC_RELEASE);
		free_hint = key;
		err = 0;
	}
	weft_unlock(&key_lock);
	return err;
}

/* The calling thread's value slot for `key`; NULL when it has none and
   `make` is 0 (or memory ran out). */
static struct weft_tsd_value *slot(struct weft_thread *t, unsigned key,
				   int make)
{
	unsigned b = key / WEFT_TSD_INLINE;

	if (b == 0)
		return &weft_tsd_inline[key]; /* t is the calling thread */
	b--;
	if (b >= t->tsd_nblocks) {
		struct weft_tsd_value **nb;
		size_t n = b + 1 > 2 * t->tsd_nblocks ? b + 1 : 2 * t->tsd_nblocks;

		struct weft_tsd_value **old = t->tsd_blocks;

		if (!make)
			return NULL;
		/* Not realloc: the old array is freed only after the
		   descriptor names the new one, so that a fork meanwhile
		   never copies a descriptor naming freed memory
		   (tsd_free_blocks). */
		nb = malloc(n * sizeof *nb);
		if (!nb)
			return NULL;
		if (t->tsd_nblocks)
			memcpy(nb, old, t->tsd_nblocks * sizeof *nb);
		memset(nb + t->tsd_nblocks, 0, (n - t->tsd_nblocks) * sizeof *nb);
		__atomic_store_n(&t->tsd_blocks, nb, __ATOMIC_RELAXED);
		__atomic_store_n(&t->tsd_nblocks, n, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_RELEASE); /* before free's own stores */
		free(old);
	}
	if (!t->tsd_blocks[b]) {
		if (!make)
			return NULL;
		t->tsd_blocks[b] = calloc(WEFT_TSD_INLINE, sizeof **t->tsd_blocks);
		if (!t->tsd_blocks[b])
			return NULL;
	}
	return &t->tsd_blocks[b][key % WEFT_TSD_INLINE];
}

void *tsd_get(pthread_key_t key)
{
	struct weft_tsd_value *v;
	uintptr_t seq;

	if (key >= nkeys || !key_live(key_at(key), &seq))
		return NULL;
	v = slot(weft_self(), key, 0);
	return v && v->seq == seq ? v->value : NULL;
}

int tsd_set(pthread_key_t key, const void *value)
{
	struct weft_thread *t;
	struct weft_tsd_value *v;
	uintptr_t seq;

	if (key >= nkeys || !key_live(key_at(key), &seq))
		return EINVAL;
	t = weft_self();
	v = slot(t, key, value != NULL);
	if (!v)
		return value ? ENOMEM : 0;
	v->seq = seq;
	v->value = (void *)value;
	if (value)
		t->tsd_stored = 1;
	return 0;
}

/* One pass over a block of values. */
static void destroy_block(struct weft_tsd_value *vals, unsigned first)
{
	for (unsigned i = 0; i < WEFT_TSD_INLINE; i++) {
		struct weft_tsd_value *v = &vals[i];
		struct key *k;
		void *value = v->value;
		uintptr_t seq;

		if (!value)
			continue;
		v->value = NULL;
		k = key_at(first + i);
		if (key_live(k, &seq) && seq == v->seq && k->destr)
			k->destr(value);
	}
}

/* POSIX's destructor rounds, with glibc's rule for repeating them:
   another round follows while a destructor stored a non-NULL value, at
   most PTHREAD_DESTRUCTOR_ITERATIONS in all. */
static void destructor_rounds(struct weft_thread *t)
{
	for (int round = 0; round < DESTRUCTOR_ITERATIONS; round++) {
		t->tsd_stored = 0;
		destroy_block(weft_tsd_inline, 0); /* t is the calling thread */
		for (size_t b = 0; b < t->tsd_nblocks; b++)
			if (t->tsd_blocks[b])
				destroy_block(t->tsd_blocks[b],
					      (unsigned)(b + 1) * WEFT_TSD_INLINE);
		if (!t->tsd_stored)
			break;
	}
}

/* Frees the value blocks of `t`, which is ours or gone: the descriptor
   forgets them first.  A fork by another thread while an exiting
   thread frees them copies the descriptor into the child, whose fork
   handler frees the blocks of every thread it does not have
   (core/fork.c); had the array still named blocks the parent had
   freed, the child would free them a second time (seen under ASan:
   t_tsd_threads, a double free in the child).  Forgotten first, what
   the parent had not freed yet at the fork is only not freed in the
   child. */
void tsd_free_blocks(struct weft_thread *t)
{
	struct weft_tsd_value **blocks = t->tsd_blocks;
	size_t n = t->tsd_nblocks;

	__atomic_store_n(&t->tsd_nblocks, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&t->tsd_blocks, NULL, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE); /* before free's own stores */
	for (size_t b = 0; b < n; b++)
		free(blocks[b]);
	free(blocks);
}

/* At thread exit: the destructor rounds, then the value blocks go.

   A destructor may call pthread_exit.  The unwind ends it and this runs
   again (thread_exit_duty).  glibc then starts the rounds over only if
   a non-NULL value was stored since the interrupted round began, and
   otherwise stops: the values that round had not reached yet lose their
   destructors.  weft does the same (t_tsd_exit). */
void tsd_run_destructors(struct weft_thread *t)
{
	int resumed = t->tsd_destroying;

	t->tsd_destroying = 1;
	if (!resumed || t->tsd_stored)
		destructor_rounds(t);
	/* Values stored by the last round's destructors are dropped, as
	   glibc clears its arrays: the thread's remaining exit hooks read
	   NULL. */
	memset(weft_tsd_inline, 0, sizeof weft_tsd_inline);
	t->tsd_destroying = 0;
	tsd_free_blocks(t);
}

void tsd_reset_in_child(void)
{
	weft_lock_reset(&key_lock);
}
