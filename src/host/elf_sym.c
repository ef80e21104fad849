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
#include <sys/auxv.h>

#include "elf_sym.h"

struct dyn_tables {
	const uint32_t *gnu_hash;
	const ElfW(Sym) *symtab;
	const char *strtab;
	const ElfW(Half) *versym; /* NULL: the object has no versions */
};

/* ld.so rewrites the address entries of a writable dynamic section to
   run-time addresses, and leaves a read-only one (the vDSO's) as link
   addresses: an entry below the load base is still a link address. */
static const void *dyn_addr(const struct dl_phdr_info *info, ElfW(Addr) v)
{
	return (const void *)(v < info->dlpi_addr ? v + info->dlpi_addr : v);
}

static int dyn_tables(const struct dl_phdr_info *info, struct dyn_tables *t)
{
	const ElfW(Dyn) *d = NULL;

	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
			d = (const ElfW(Dyn) *)(info->dlpi_addr +
						info->dlpi_phdr[i].p_vaddr);
	if (!d)
		return 0;
	memset(t, 0, sizeof *t);
	for (; d->d_tag != DT_NULL; d++) {
		if (d->d_tag == DT_GNU_HASH)
			t->gnu_hash = dyn_addr(info, d->d_un.d_ptr);
		else if (d->d_tag == DT_SYMTAB)
			t->symtab = dyn_addr(info, d->d_un.d_ptr);
		else if (d->d_tag == DT_STRTAB)
			t->strtab = dyn_addr(info, d->d_un.d_ptr);
		else if (d->d_tag == DT_VERSYM)
			t->versym = dyn_addr(info, d->d_un.d_ptr);
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

/* 1 defined (*sym set to the default definition, if any), 0 not, -1 the
   table could not be read. */
static int defines(const struct dl_phdr_info *info, const char *name, uint32_t h,
		   const ElfW(Sym) **sym)
{
	struct dyn_tables t;
	uint32_t nbuckets, symoffset, bloom_size, shift, i;
	const ElfW(Addr) *bloom;
	const uint32_t *buckets, *chain;
	ElfW(Addr) word, mask;
	const unsigned bits = sizeof(ElfW(Addr)) * 8;
	int found = 0;

	*sym = NULL;
	if (!dyn_tables(info, &t))
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
			if (is_default_version(&t, i)) {
				*sym = s;
				return 1;
			}
		}
		if (h2 & 1)
			break;
	}
	return found;
}

struct search {
	const char *name;
	uint32_t hash;
	uintptr_t self; /* 0: no object skipped */
	int self_seen;  /* only objects after self count (RTLD_NEXT) */
	int before;     /* an object before self defines it */
	int found;
	void *addr;     /* host_sym_lookup: the definition's address */
};

static int is_self(const struct dl_phdr_info *info, uintptr_t self)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && self >= lo && self - lo < ph->p_memsz)
			return 1;
	}
	return 0;
}

/* The vDSO is on the loader's list of objects but in no lookup scope:
   its clock_gettime and getrandom are not what dlsym finds (libc's). */
static int is_vdso(const struct dl_phdr_info *info)
{
	uintptr_t ehdr = getauxval(AT_SYSINFO_EHDR);

	return ehdr && (uintptr_t)info->dlpi_phdr ==
			       ehdr + ((const ElfW(Ehdr) *)ehdr)->e_phoff;
}

static int search_one(struct dl_phdr_info *info, size_t sz, void *data)
{
	struct search *s = data;
	const ElfW(Sym) *sym;
	int d;

	(void)sz;
	if (is_vdso(info))
		return 0;
	if (s->self && !s->self_seen) {
		s->self_seen = is_self(info, s->self);
		if (!s->self_seen && !s->before)
			s->before = defines(info, s->name, s->hash, &sym) != 0;
		return 0;
	}
	d = defines(info, s->name, s->hash, &sym);
	s->found = d != 0;
	if (d > 0 && sym && ELF64_ST_TYPE(sym->st_info) != STT_GNU_IFUNC &&
	    ELF64_ST_TYPE(sym->st_info) != STT_TLS)
		s->addr = (void *)((sym->st_shndx == SHN_ABS ? 0 : info->dlpi_addr) +
				   sym->st_value);
	return s->found;
}

static void search(struct search *s)
{
	s->hash = gnu_hash(s->name);
	dl_iterate_phdr(search_one, s);
}

void *host_sym_lookup(const char *name, int next, int *sure)
{
	struct search s = {.name = name};

	s.self = next ? (uintptr_t)&host_sym_lookup : 0;
	search(&s);
	/* Not found: nothing defines it.  Found without an address: an
	   IFUNC (its resolver is the dynamic linker's to call), a table
	   weft cannot read, or only hidden versions: dlsym decides.  Found
	   only before libweft: libweft was loaded after libc (by dlopen),
	   where what RTLD_NEXT finds depends on the loader's scopes: dlsym
	   decides too. */
	*sure = s.addr || (!s.found && !s.before);
	return s.addr;
}
