/* A stand-in for an NPB kernel whose time is planted (tests/test_planted_truths.py).

   It computes nothing. It reads the situation it was started in, as the real kernel
   would feel it:
     - its own name (/proc/self/exe: <bench>.<class>.x, one copy per kind and class),
     - the CPUs it may run on (sched_getaffinity: what numactl --physcpubind / taskset gave),
     - the memory policy it was given (get_mempolicy: numactl --localalloc is `local`,
       --membind=0 `bind`, no numactl `default`),
     - the OpenMP binding (OMP_PLACES set: `threads`, else `process`) and OMP_NUM_THREADS,
     - its run id and study from its working directory (results/<study>/runs/<run id>/work),
   looks the situation up in rules.tsv beside its bin/ folder (first matching line wins,
   `*` matches anything), and prints NPB's report with the planted time, moved by noise
   seeded from the run id, and the Mop/s that NPB's operation count gives for that time.

   rules.tsv, tab-separated:
     mop  <bench> <class> <millions of operations>
     rule <study> <bench> <class> <cpus> <policy> <binding> <seconds> <noise> <sleep> <widen>
   noise: the largest relative deviation (uniform in [-noise, +noise]); sleep: seconds of
   wall time to spend (sleeping) so that the run is long enough to be sampled; widen: 1 =
   the process widens its own CPU mask to every CPU once started (its threads leave the
   placement: planted drift). */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static const char *policy_name(int mode) {
    switch (mode) {
    case 0: return "default";
    case 1: return "preferred";
    case 2: return "bind";
    case 3: return "interleave";
    case 4: return "local";
    default: return "other";
    }
}

static int matches(const char *pattern, const char *value) {
    return strcmp(pattern, "*") == 0 || strcmp(pattern, value) == 0;
}

static uint64_t fnv1a(const char *s) {
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++) { h ^= (unsigned char)*s; h *= 1099511628211ULL; }
    return h;
}

static uint64_t splitmix(uint64_t *x) {
    uint64_t z = (*x += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

int main(void) {
    char exe[PATH_MAX], cwd[PATH_MAX], rules[PATH_MAX + 32];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0 || !getcwd(cwd, sizeof cwd)) { perror("stand-in"); return 2; }
    exe[n] = 0;

    /* <bench>.<class>.x */
    char *base = strrchr(exe, '/') + 1, bench[16] = "", cls[4] = "";
    if (sscanf(base, "%15[^.].%3[^.].x", bench, cls) != 2) { fprintf(stderr, "name %s\n", base); return 2; }
    char upper[16];
    for (size_t i = 0; i <= strlen(bench); i++) upper[i] = (char)(bench[i] >= 'a' && bench[i] <= 'z' ? bench[i] - 32 : bench[i]);

    /* .../results/<study>/runs/<run id>/work */
    char *parts[64]; int np = 0;
    char path[PATH_MAX]; strcpy(path, cwd);
    for (char *t = strtok(path, "/"); t && np < 64; t = strtok(NULL, "/")) parts[np++] = t;
    if (np < 4 || strcmp(parts[np - 1], "work") || strcmp(parts[np - 3], "runs")) {
        fprintf(stderr, "stand-in: not in a run's work folder: %s\n", cwd); return 2;
    }
    const char *run_id = parts[np - 2], *study = parts[np - 4];

    /* CPUs: "0", "1", "0,1" */
    cpu_set_t set; CPU_ZERO(&set);
    sched_getaffinity(0, sizeof set, &set);
    char cpus[256] = ""; int ncpu = 0;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &set)) {
            snprintf(cpus + strlen(cpus), sizeof cpus - strlen(cpus), "%s%d", ncpu ? "," : "", c);
            ncpu++;
        }

    int mode = -1; unsigned long mask[16];
    if (syscall(SYS_get_mempolicy, &mode, mask, 16 * 8 * sizeof(unsigned long), NULL, 0UL) != 0) mode = -1;
    /* older numactl says --localalloc as preferred with an empty node mask */
    int empty = 1;
    for (int i = 0; i < 16; i++) if (mask[i]) empty = 0;
    const char *policy = (mode == 1 && empty) ? "local" : policy_name(mode);

    const char *places = getenv("OMP_PLACES"), *nt = getenv("OMP_NUM_THREADS");
    const char *binding = places && *places ? "threads" : "process";
    int threads = nt ? atoi(nt) : 1;

    snprintf(rules, sizeof rules, "%s", exe);
    *strrchr(rules, '/') = 0;                          /* .../bin */
    strcat(rules, "/../rules.tsv");
    FILE *f = fopen(rules, "r");
    if (!f) { perror(rules); return 2; }
    double mop = -1, seconds = -1, noise = 0, sleep_s = 0; int widen = 0;
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        char k[16], a[128], b[32], c[32], d[64], e[32], g[32];
        double s, z, sl; int w;
        if (sscanf(line, "mop %31s %31s %lf", b, c, &s) == 3 && !strcmp(b, bench) && !strcmp(c, cls)) mop = s;
        if (seconds < 0 && sscanf(line, "%15s %127s %31s %31s %63s %31s %31s %lf %lf %lf %d",
                                  k, a, b, c, d, e, g, &s, &z, &sl, &w) == 11 && !strcmp(k, "rule")
            && matches(a, study) && matches(b, bench) && matches(c, cls) && matches(d, cpus)
            && matches(e, policy) && matches(g, binding)) {
            seconds = s; noise = z; sleep_s = sl; widen = w;
        }
    }
    fclose(f);
    if (seconds < 0 || mop < 0) {
        fprintf(stderr, "stand-in: no rule for study %s, %s.%s on cpus %s, memory %s, binding %s\n",
                study, bench, cls, cpus, policy, binding);
        return 3;
    }

    if (widen) {                                       /* planted drift: leave the placement */
        cpu_set_t all; CPU_ZERO(&all);
        long ncpus = sysconf(_SC_NPROCESSORS_ONLN);
        for (long c = 0; c < ncpus; c++) CPU_SET(c, &all);
        sched_setaffinity(0, sizeof all, &all);
    }
    if (sleep_s > 0) {
        struct timespec ts = {(time_t)sleep_s, (long)((sleep_s - (time_t)sleep_s) * 1e9)};
        while (nanosleep(&ts, &ts) && errno == EINTR) {}
    }

    uint64_t x = fnv1a(run_id);
    double u = (double)(splitmix(&x) >> 11) / 9007199254740992.0;   /* [0, 1) */
    double t = seconds * (1 + noise * (2 * u - 1));

    printf("\n\n %s Benchmark Completed.\n", upper);
    printf(" Class           = %24s\n", cls);
    printf(" Size            = %24s\n", "stand-in");
    printf(" Iterations      = %24d\n", 1);
    printf(" Time in seconds = %24.2f\n", t);
    printf(" Total threads   = %24d\n", threads);
    printf(" Avail threads   = %24d\n", threads);
    printf(" Mop/s total     = %24.2f\n", mop / t);
    printf(" Mop/s/thread    = %24.2f\n", mop / t / (threads > 0 ? threads : 1));
    printf(" Operation type  = %24s\n", "floating point");
    printf(" Verification    = %24s\n", "SUCCESSFUL");
    printf(" Version         = %24s\n", "planted");
    printf(" (planted: study %s run %s cpus %s memory %s binding %s: %.4f s)\n",
           study, run_id, cpus, policy, binding, t);
    return 0;
}
