/* A symbol's presence in the loaded objects, from their GNU hash tables
   (elf_sym.h).

   .gnu.hash:  nbuckets, symoffset, bloom_size, bloom_shift,
               bloom[bloom_size] (one word each), buckets[nbuckets],
               chain[] (one hash per symbol from symoffset; low bit set
               on a bucket's last)
   A name's hash h picks two bits in one bloom word; if either is clear
   the object does not define it, which settles most objects without
   touching more than that word. */
#include <link.h>
#include <stdint.h>
#include <string.h>

#include "elf_sym.h"
#include "objects.h"

struct dyn_tables {
	const uint32_t *gnu_hash;
	const ElfW(Sym) *symtab;
	const char *strtab;
	const ElfW(Half) *versym; /* NULL: the object has no versions */
	const ElfW(Verdef) *verdef;
	size_t verdefnum;
};

/* ld.so rewrites the address entries of a writable dynamic section to
   run-time addresses, and leaves a read-only one (the vDSO's) as link
   addresses: an entry below the load base is still a link address. */
static const void *dyn_addr(const struct host_object *o, ElfW(Addr) v)
{
	return (const void *)(v < o->base ? v + o->base : v);
}

static int dyn_tables(const struct host_object *o, struct dyn_tables *t)
{
	const ElfW(Dyn) *d = o->dynamic;

	if (!d)
		return 0;
	memset(t, 0, sizeof *t);
	for (; d->d_tag != DT_NULL; d++) {
		if (d->d_tag == DT_GNU_HASH)
			t->gnu_hash = dyn_addr(o, d->d_un.d_ptr);
		else if (d->d_tag == DT_SYMTAB)
			t->symtab = dyn_addr(o, d->d_un.d_ptr);
		else if (d->d_tag == DT_STRTAB)
			t->strtab = dyn_addr(o, d->d_un.d_ptr);
		else if (d->d_tag == DT_VERSYM)
			t->versym = dyn_addr(o, d->d_un.d_ptr);
		else if (d->d_tag == DT_VERDEF)
			t->verdef = dyn_addr(o, d->d_un.d_ptr);
		else if (d->d_tag == DT_VERDEFNUM)
			t->verdefnum = d->d_un.d_val;
	}
	return t->gnu_hash && t->symtab && t->strtab;
}

static uint32_t gnu_hash(const char *s)
{
	uint32_t h = 5381;

	for (; *s; s++)
		h = h * 33 + (unsigned char)*s;
	return h;
}

/* Whether a symbol is one the dynamic linker's lookup may return:
   defined, with a value (a version's own name is an absolute symbol of
   value 0), of a type a lookup accepts. */
static int is_lookup_def(const ElfW(Sym) *s)
{
	unsigned type = ELF64_ST_TYPE(s->st_info);

	return s->st_shndx != SHN_UNDEF && (s->st_value != 0 || type == STT_TLS) &&
	       (type <= STT_FUNC || type == STT_COMMON || type == STT_TLS ||
		type == STT_GNU_IFUNC);
}

/* Whether symbol i is of the version an unversioned lookup takes: the
   default one (or the object has none), not a hidden older version
   (glibc's pthread_cond_wait@GLIBC_2.2.5 beside
   pthread_cond_wait@@GLIBC_2.3.2). */
static int is_default_version(const struct dyn_tables *t, uint32_t i)
{
	return !t->versym ||
	       (!(t->versym[i] & 0x8000) && (t->versym[i] & 0x7fff) != 0);
}

/* The name of version index ndx (DT_VERDEF), or NULL. */
static const char *version_name(const struct dyn_tables *t, unsigned ndx)
{
	const ElfW(Verdef) *vd = t->verdef;

	for (size_t k = 0; vd && k < t->verdefnum; k++) {
		if (vd->vd_ndx == ndx) {
			const ElfW(Verdaux) *a = (const ElfW(Verdaux) *)(
				(const char *)vd + vd->vd_aux);

			return t->strtab + a->vda_name;
		}
		if (!vd->vd_next)
			break;
		vd = (const ElfW(Verdef) *)((const char *)vd + vd->vd_next);
	}
	return NULL;
}

/* Whether symbol i is the one a lookup takes: of `version` (hidden or
   not) when one is asked for, else the default one. */
static int is_wanted_version(const struct dyn_tables *t, uint32_t i,
			     const char *version)
{
	const char *v;

	if (!version)
		return is_default_version(t, i);
	v = t->versym ? version_name(t, t->versym[i] & 0x7fff) : NULL;
	return v && strcmp(v, version) == 0;
}

/* 1 defined (*sym set to the wanted version's definition, if any), 0
   not, -1 the table could not be read. */
static int defines(const struct host_object *o, const char *name,
		   const char *version, uint32_t h, const ElfW(Sym) **sym)
{
	struct dyn_tables t;
	uint32_t nbuckets, symoffset, bloom_size, shift, i;
	const ElfW(Addr) *bloom;
	const uint32_t *buckets, *chain;
	ElfW(Addr) word, mask;
	const unsigned bits = sizeof(ElfW(Addr)) * 8;
	int found = 0;

	*sym = NULL;
	if (!dyn_tables(o, &t))
		return -1;
	nbuckets = t.gnu_hash[0];
	symoffset = t.gnu_hash[1];
	bloom_size = t.gnu_hash[2];
	shift = t.gnu_hash[3];
	if (!nbuckets || !bloom_size)
		return 0;
	bloom = (const ElfW(Addr) *)(t.gnu_hash + 4);
	buckets = (const uint32_t *)(bloom + bloom_size);
	chain = buckets + nbuckets;
	word = bloom[(h / bits) % bloom_size];
	mask = ((ElfW(Addr))1 << (h % bits)) | ((ElfW(Addr))1 << ((h >> shift) % bits));
	if ((word & mask) != mask)
		return 0;
	for (i = buckets[h % nbuckets]; i >= symoffset && i != 0; i++) {
		uint32_t h2 = chain[i - symoffset];
		const ElfW(Sym) *s = &t.symtab[i];

		if ((h | 1) == (h2 | 1) && is_lookup_def(s) &&
		    strcmp(t.strtab + s->st_name, name) == 0) {
			found = 1;
			if (is_wanted_version(&t, i, version)) {
				*sym = s;
				return 1;
			}
		}
		if (h2 & 1)
			break;
	}
	return version ? 0 : found;
}

struct search {
	const char *name;
	const char *version; /* NULL: the default one */
	uint32_t hash;
	int skip_self;  /* only objects after libweft count (RTLD_NEXT) */
	int self_seen;
	int before;     /* an object before self defines it */
	int found;
	const ElfW(Sym) *sym;
	uintptr_t base; /* of the object that defines sym */
};

static int search_one(struct host_object *o, void *data)
{
	struct search *s = data;
	const ElfW(Sym) *sym;
	int d;

	if (host_object_is_vdso(o))
		return 0;
	if (s->skip_self && !s->self_seen) {
		s->self_seen = host_object_is_self(o);
		if (!s->self_seen && !s->before)
			s->before = defines(o, s->name, s->version, s->hash, &sym) != 0;
		return 0;
	}
	d = defines(o, s->name, s->version, s->hash, &sym);
	if (d < 0 && s->version)
		d = 0; /* an unreadable table: not the versioned object */
	s->found = d != 0;
	if (d > 0 && sym) {
		s->sym = sym;
		s->base = sym->st_shndx == SHN_ABS ? 0 : o->base;
	}
	return s->found;
}

static void search(struct search *s)
{
	s->hash = gnu_hash(s->name);
	host_objects_each(search_one, s);
}

static int has_address(const ElfW(Sym) *sym)
{
	unsigned type = ELF64_ST_TYPE(sym->st_info);

	return type != STT_GNU_IFUNC && type != STT_TLS;
}

void *host_sym_lookup(const char *name, int next, int *sure)
{
	struct search s = {.name = name, .skip_self = next};
	void *addr = NULL;

	search(&s);
	if (s.sym && has_address(s.sym))
		addr = (void *)(s.base + s.sym->st_value);
	/* Not found: nothing defines it.  Found without an address: an
	   IFUNC (its resolver is the dynamic linker's to call), a table
	   weft cannot read, or only hidden versions: dlsym decides.  Found
	   only before libweft: libweft was loaded after libc (by dlopen),
	   where what RTLD_NEXT finds depends on the loader's scopes: dlsym
	   decides too. */
	*sure = addr || (!s.found && !s.before);
	return addr;
}

const ElfW(Sym) *host_vsym_lookup(const char *name, const char *version,
				  uintptr_t *base)
{
	struct search s = {.name = name, .version = version};

	search(&s);
	*base = s.base;
	return s.sym;
}

void *host_vsym_addr(const char *name, const char *version)
{
	uintptr_t base;
	const ElfW(Sym) *sym = host_vsym_lookup(name, version, &base);

	return sym && has_address(sym) ? (void *)(base + sym->st_value) : NULL;
}
