/* empty_preload.c - the floor of `weft bench`'s process rows (st: fork,
 * spawn, start): a shared library that does nothing, preloaded as weft
 * is.  What a process pays for it (the loader opening, mapping and
 * relocating one more object; a fork copying its mappings) is the part
 * of weft's cost that any preloaded library has, whatever it does. */
int weft_bench_empty_preload;
