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

struct dyn_tables {
	const uint32_t *gnu_hash;
	const ElfW(Sym) *symtab;
	const char *strtab;
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

/* 1 defined, 0 not, -1 the table could not be read. */
static int defines(const struct dl_phdr_info *info, const char *name, uint32_t h)
{
	struct dyn_tables t;
	uint32_t nbuckets, symoffset, bloom_size, shift, i;
	const ElfW(Addr) *bloom;
	const uint32_t *buckets, *chain;
	ElfW(Addr) word, mask;
	const unsigned bits = sizeof(ElfW(Addr)) * 8;

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

		if ((h | 1) == (h2 | 1) && s->st_shndx != SHN_UNDEF &&
		    strcmp(t.strtab + s->st_name, name) == 0)
			return 1;
		if (h2 & 1)
			break;
	}
	return 0;
}

struct search {
	const char *name;
	uint32_t hash;
	uintptr_t self; /* 0: no object skipped */
	int found;
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

static int search_one(struct dl_phdr_info *info, size_t sz, void *data)
{
	struct search *s = data;

	(void)sz;
	if (s->self && is_self(info, s->self))
		return 0;
	s->found = defines(info, s->name, s->hash) != 0;
	return s->found;
}

int host_may_define(const char *name, int but_self)
{
	struct search s = {name, gnu_hash(name),
			   but_self ? (uintptr_t)&host_may_define : 0, 0};

	dl_iterate_phdr(search_one, &s);
	return s.found;
}
