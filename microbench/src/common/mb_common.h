/* numaplace memory micro-benchmarks: what membw and memlat share (timer, where a thread
 * runs, cache sizes from sysfs, which node holds a buffer's pages, the output format).
 * Linux only; no libnuma: getcpu(2) and move_pages(2) are called as raw syscalls. */
#ifndef MB_COMMON_H
#define MB_COMMON_H
#include <stddef.h>
#include <stdint.h>

#define MB_FORMAT_VERSION 1
#define MB_MAX_NODES 256
#define MB_MAX_SIZES 256
#define MB_LINE 64

double mb_now(void);                     /* CLOCK_MONOTONIC seconds */
void mb_where(int *cpu, int *node);      /* getcpu(2) of the calling thread */

/* Cache geometry of one CPU from /sys/devices/system/cpu/cpuN/cache. */
typedef struct { size_t l1d, l2, l3, llc, llc_total; int llc_level; } mb_caches;
void mb_read_caches(int cpu, mb_caches *c);

/* Pages of [buf, buf+len) per node (move_pages with nodes=NULL); counts[] has MB_MAX_NODES
 * entries; returns pages asked, *unknown gets pages with no node (not present, error). */
long mb_page_nodes(const void *buf, size_t len, long counts[], long *unknown);
/* Majority node of counts and its share of all pages asked. */
/* kB of [buf, buf+len) that transparent huge pages back (AnonHugePages of the mappings
   it overlaps in /proc/self/smaps), or -1 when smaps cannot be read */
long mb_huge_kb(const void *buf, size_t len);
int mb_majority_node(const long counts[], long total, double *share);

void *mb_alloc(size_t len, int hugepages);  /* page-aligned (2 MiB with hugepages, madvised) */

/* Where a buffer went: the first-touching thread's CPU and node, and its pages per node */
typedef struct {
    int cpu, node;          /* where the first-touching thread was */
    int memory_node;        /* majority node of the pages */
    double share;           /* fraction of the pages on memory_node */
    long pages;
    long huge_kb;           /* backed by transparent huge pages (-1: unknown) */
    char by_node[512];      /* node:pages of every node holding some */
} mb_placement;
/* Fill pl for [buf, buf+len), from the thread that first touched it, right after */
void mb_locate(const void *buf, size_t len, mb_placement *pl);

/* Size list "4K,1M,2.5M,64M" (K/M/G = 2^10/2^20/2^30; plain bytes) or names resolved from
 * the caches: L1 = L1d/2, L2 = L2/2, LLC = LLC/2, DRAM = 4 x all LLCs; returns count, -1 if bad. */
int mb_parse_sizes(const char *text, size_t out[], int max, const mb_caches *c);
/* geometric sweep lo..hi with `per_octave` points per doubling, multiples of `unit` */
int mb_sweep(size_t lo, size_t hi, int per_octave, size_t unit, size_t out[], int max);

/* Header lines common to both benchmarks: format, host caches, policy facts. */
void mb_print_header(const char *bench, const mb_caches *c, int hugepages);
/* "0:123,2:4" (node:pages of every node holding some), "none" if none */
void mb_format_nodes(const long counts[], char *out, size_t n);
void mb_flush(size_t bytes);
void mb_die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
#endif
