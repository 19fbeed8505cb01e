/* The pointer chase memlat and loadlat share: one pointer per `stride` bytes, linked into
 * one random cycle (Sattolo's shuffle), so that no prefetcher can guess the next line. */
#ifndef MB_CHASE_H
#define MB_CHASE_H
#include <stddef.h>
#include <stdint.h>
#include "mb_common.h"

/* Write the chain into buf (lines x stride bytes): the pointer at line i holds the
 * address of the next line of one random cycle through all of them. */
void mb_build_chain(char *buf, size_t lines, size_t stride, uint64_t seed);
/* Checks --stride (a multiple of a pointer; dies otherwise) and rounds --min-loads up to
 * a multiple of 16, at least 16 (mb_chase's unrolling) */
void mb_chase_options(size_t stride, long *min_loads);
/* The chain of one size, first-touched by the caller: size / stride lines (dies on fewer
 * than 2) in a new buffer, written by mb_build_chain and located (pl); *lines set */
char *mb_chain_buffer(size_t size, size_t stride, int hugepages, uint64_t seed, size_t *lines, mb_placement *pl);
/* `steps` dependent loads from p (a multiple of 16); returns where it stopped */
void *mb_chase(void *p, long steps);
/* One timed chase of `steps` loads from start: seconds */
double mb_timed_chase(void *start, long steps);
/* 1 when the chain from buf is still one cycle through all `lines` lines */
int mb_chain_intact(char *buf, size_t lines);
/* steps for the next try of a region that lasted `secs` < min_time: longer, x2 to x100 */
long mb_longer(long steps, double secs, double min_time);
#endif
