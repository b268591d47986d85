/* report.c — unified-bench's output: the table, markdown, JSON (json-c), and the plots
 * (gnuplot writes the PNGs: a grouped bar chart of ops/s per test and database, and
 * each test's latency distribution). */
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "bench/unified/ub.h"

static const ub_result *R(const ub_run *run, size_t t, size_t d) { return &run->results[t * run->ndbs + d]; }

static void fmt_ns(char *b, size_t n, uint64_t ns)
{
    if (ns == 0) snprintf(b, n, "-");
    else if (ns < 1000) snprintf(b, n, "%lluns", (unsigned long long)ns);
    else if (ns < 1000000) snprintf(b, n, "%.1fus", (double)ns / 1e3);
    else if (ns < 1000000000) snprintf(b, n, "%.2fms", (double)ns / 1e6);
    else snprintf(b, n, "%.2fs", (double)ns / 1e9);
}

static void fmt_bytes(char *b, size_t n, double v)
{
    if (v < 1024) snprintf(b, n, "%.0fB", v);
    else if (v < 1048576) snprintf(b, n, "%.1fKiB", v / 1024);
    else if (v < 1073741824) snprintf(b, n, "%.1fMiB", v / 1048576);
    else snprintf(b, n, "%.2fGiB", v / 1073741824);
}

static void fmt_ops(char *b, size_t n, const ub_result *r)
{
    if (r->skipped) snprintf(b, n, "n/a");
    else if (r->ops_per_sec < 0) snprintf(b, n, "FAILED");
    else snprintf(b, n, "%.0f%s", r->ops_per_sec, r->truncated ? "*" : "");
}

/* The runs' range as a percentage of the median: -low/+high. */
static void fmt_range(char *b, size_t n, const ub_result *r)
{
    if (r->ops_per_sec <= 0 || r->runs < 2) snprintf(b, n, "-");
    else snprintf(b, n, "-%.0f/+%.0f%%", 100.0 * (r->ops_per_sec - r->ops_per_sec_min) / r->ops_per_sec,
                  100.0 * (r->ops_per_sec_max - r->ops_per_sec) / r->ops_per_sec);
}

static void fmt_faults(char *b, size_t n, uint64_t v)
{
    if (v == 0) snprintf(b, n, "0");
    else snprintf(b, n, "%llu!", (unsigned long long)v); /* flagged: the page cache missed */
}

static void fmt_cpu(char *b, size_t n, const ub_result *r)
{
    if (r->ops_per_sec < 0 || r->cpu_s <= 0) snprintf(b, n, "-");
    else snprintf(b, n, "%.0f", (double)r->ops / r->cpu_s);
}

static void fmt_amp(char *b, size_t n, double v)
{
    if (v < 0) snprintf(b, n, "-");
    else snprintf(b, n, "%.2f", v);
}

static void fmt_alloc(char *b, size_t n, double v)
{
    if (v < 10) snprintf(b, n, "%.2f", v);
    else snprintf(b, n, "%.0f", v);
}

/* The reference for the ratio column: the best peer (another project's store) in
 * each test, by median ops/s; -1 when no peer ran or all failed. */
static long best_peer(const ub_run *run, size_t t)
{
    long best = -1;
    for (size_t d = 0; d < run->ndbs; d++) {
        if (!run->dbs[d]->peer || R(run, t, d)->ops_per_sec <= 0) continue;
        if (best < 0 || R(run, t, d)->ops_per_sec > R(run, t, (size_t)best)->ops_per_sec) best = (long)d;
    }
    return best;
}

static double ratio(const ub_run *run, size_t t, size_t d)
{
    long b = best_peer(run, t);
    const ub_result *r = R(run, t, d);
    if (b < 0 || r->ops_per_sec <= 0) return -1;
    return r->ops_per_sec / R(run, t, (size_t)b)->ops_per_sec;
}

static void fmt_ratio(char *b, size_t n, const ub_run *run, size_t t, size_t d)
{
    double x = ratio(run, t, d);
    if (x < 0) snprintf(b, n, "-");
    else snprintf(b, n, "%.2fx", x);
}

static const char *HEADLINE = "wisckey-lmdb";

static void db_cell(char *b, size_t n, const ub_adapter *ad, int md)
{
    if (!ad->label) snprintf(b, n, "%s", ad->name);
    else if (md) snprintf(b, n, "%s (%s)", ad->name, ad->label);
    else snprintf(b, n, "%s (%s)", ad->name, ad->reference ? "R" : "L");
}

/* The headline: the complete store against the best peer, test by test. */
static void print_headline(const ub_run *run, FILE *f, int md)
{
    size_t h;
    for (h = 0; h < run->ndbs; h++)
        if (!strcmp(run->dbs[h]->name, HEADLINE)) break;
    if (h == run->ndbs) return;
    fprintf(f, "%sheadline: %s (the complete store: LMDB index + our log) against the best peer in each test, "
               "medians of %d runs%s\n", md ? "\n**" : "# ", HEADLINE, run->cfg->runs, md ? "**" : ":");
    if (md) fprintf(f, "\n| test | %s ops/s | best peer | its ops/s | ratio |\n| --- | ---: | --- | ---: | ---: |\n",
                    HEADLINE);
    for (size_t t = 0; t < run->ntests; t++) {
        long b = best_peer(run, t);
        const ub_result *r = R(run, t, h);
        char ops[32], ra[32], bops[32];
        fmt_ops(ops, sizeof ops, r);
        fmt_ratio(ra, sizeof ra, run, t, h);
        if (b >= 0) fmt_ops(bops, sizeof bops, R(run, t, (size_t)b));
        else snprintf(bops, sizeof bops, "-");
        if (md)
            fprintf(f, "| %s | %s | %s | %s | %s |\n", run->tests[t], ops, b >= 0 ? run->dbs[b]->name : "-", bops, ra);
        else
            fprintf(f, "#   %-38s %12s ops/s  %7s of %s (%s)\n", run->tests[t], ops, ra, b >= 0 ? run->dbs[b]->name : "-",
                    bops);
    }
}

static const char *profile_name(const ub_config *c) { return c->durable ? "durable" : "fast"; }

/* -vlog-frames as given: off, K or auto (the autotuner; frames of up to 64). */
static const char *frames_arg(const ub_config *c, char *buf, size_t cap)
{
    if (c->vlog_autotune) return "auto";
    if (c->vlog_frames < 2) return "off";
    snprintf(buf, cap, "%u", c->vlog_frames);
    return buf;
}

static void print_header(const ub_run *run, FILE *f, int md)
{
    const ub_config *c = run->cfg;
    const char *b = md ? "- " : "", *code = md ? "`" : "";
    fprintf(f, "%sunified-bench: %llu keys (16 B), values: %s\n", md ? "- " : "# ", (unsigned long long)c->keys,
            ub_values_describe());
    fprintf(f, "%sprofile %s, seed %llu, %d reader threads in *_parallel, batch size %zu, writes from 1 thread%s\n", b,
            profile_name(c), (unsigned long long)c->seed, c->threads, c->batchsize,
            c->max_wall_s > 0 ? ", tests cut after -max-wall (marked *)" : "");
    static const char *const codec[] = { "none", "lz4", "zlib", "zstd" }, *const sync[] = { "none", "batch", "seal" };
    char fr[16];
    fprintf(f, "%sflags: -keys %llu -valsize %zu -val-pattern %s -threads %d -batchsize %zu -seed %llu -profile %s "
               "-runs %d -max-wall %g -mem-limit %llu -lmdb-nordahead %s -vlog-mmap-budget %s -vlog-codec %s "
               "-vlog-dict %s -vlog-frames %s -vlog-sync %s -vlog-segment-bytes %llu%s -vlog-write-buffer %u -vlog-write-map %d -dir %s "
               "-keep %s\n", b,
            (unsigned long long)c->keys, c->valsize, c->pattern_arg, c->threads, c->batchsize,
            (unsigned long long)c->seed, profile_name(c), c->runs, c->max_wall_s, (unsigned long long)c->mem_limit_bytes,
            c->lmdb_nordahead < 0 ? "auto" : c->lmdb_nordahead ? "on" : "off",
            c->vlog_mmap_budget_set ? "(set, below)" : "(the library's default)", codec[c->vlog_codec],
            c->vlog_dict_auto ? "auto" : "off", frames_arg(c, fr, sizeof fr), sync[c->vlog_sync],
            (unsigned long long)c->vlog_segment_bytes,
            c->vlog_segment_bytes ? "" : " (the library's default)", c->vlog_write_buffer, c->vlog_write_map, c->dir, c->keep ? "true" : "false");
    char gcp[512];
    ub_vlog_gc_describe(c, gcp, sizeof gcp);
    fprintf(f, "%s-vlog-gc %s: %s\n", b, c->vlog_gc == UB_GC_OFF ? "off" : c->vlog_gc == UB_GC_MANUAL ? "manual" : "background", gcp);
    fprintf(f, "%s%d runs per test and database, the databases interleaved (run 1 of each, then run 2 starting one "
               "database later, ...); every figure is the median run's, with the runs' range beside ops/s\n",
            b, c->runs);
    fprintf(f, "%scrash semantics (%s profile), syncs per operation:\n", b, profile_name(c));
    for (size_t d = 0; d < run->ndbs; d++) {
        char sy[512] = "";
        if (run->dbs[d]->syncs) run->dbs[d]->syncs(c, sy, sizeof sy);
        fprintf(f, "%s  %s%s%s: %s\n", md ? "  -" : "#", code, run->dbs[d]->name, code, sy);
    }
    fprintf(f, "%smachine: %s\n", b, run->machine);
    fprintf(f, "%sload average (1, 5, 15 min; the machine is shared): %s at the start, %s at the end\n", b,
            run->load_start, run->load_end);
    if (run->mem_note[0]) fprintf(f, "%s%s\n", b, run->mem_note);
    if (c->replay_path) fprintf(f, "%sreplay trace: %s\n", b, c->replay_path);
    fprintf(f, "%scompression: %s\n", b, run->compression);
    if (run->mmap_note[0]) fprintf(f, "%s%s\n", b, run->mmap_note);
    for (size_t d = 0; d < run->ndbs; d++) {
        char opts[2048];
        run->dbs[d]->describe(c, opts, sizeof opts);
        fprintf(f, "%s%s%s%s — %s.\n%s    options: %s\n%s    tests: %s\n", b, code, run->dbs[d]->name, code,
                run->dbs[d]->what, md ? "  " : "#", opts, md ? "  " : "#", run->dbs[d]->notes);
    }
    fprintf(f, "%s(L) = %s: the `vlog` rows measure the log alone, not a store; (R) = a reference (null: the "
               "harness's own cost, floor: the physical floor), never the best peer\n", b,
            "log only, in-memory index, not persistent");
    fprintf(f, "%sops/s excludes open and close, and includes one clock read per op; the write tests (write_seq, "
               "write_rand, batch_write) time the database's put calls only, the values generated between them "
               "(the harness's copy from its pool: in their ops/CPU-s, not in their ops/s or latency); every read checks every byte of "
               "the value against the expected bytes, for every database; range = the slowest and fastest run "
               "against the median; latency from a log-bucket histogram (1/8 relative width); "
               "B/op = bytes allocated (jemalloc thread.allocated) by the measuring threads in the timed phase, per "
               "op, after a warm-up with the same call (allocations of background threads are not counted); "
               "WA = bytes written by the process (/proc/self/io write_bytes, including flushes and compactions "
               "waited for after the writes) / user bytes (key + value); SA = bytes on disk / live user bytes; "
               "xbest = ops/s relative to the best peer (lmdb or a rocksdb row, marked by its name below) in the same "
               "test; ops/CPU-s = ops per CPU second of the whole process (getrusage: every thread, background "
               "flushes and compactions included) over the timed phase plus the settle after writes; maxRSS = the "
               "harness's %.0f MiB plus the resident growth during the database's own calls (all databases of a test "
               "stay open); majflt = major faults of the process, refault = workingset_refault_file of %s, summed "
               "over the runs; nonzero is flagged '!': the page cache missed, and a slow figure may be eviction, "
               "not the database; churn: ops/s is the overwrites alone, our GC runs after them (gc_s in the notes), "
               "RocksDB's compaction in its threads meanwhile and after; all of it in ops/CPU-s, WA and SA%s\n",
            b, (double)run->base_rss_bytes / 1048576.0, ub_refaults_source(),
            c->mem_limit_bytes ? "; cgpeak = the peak charge of the database's memory cgroup in the run "
                                 "(its memory and the page cache it caused)" : "");
}

static void print_table(const ub_run *run, FILE *f)
{
    print_header(run, f, 0);
    print_headline(run, f, 0);
    int cg = run->cfg->mem_limit_bytes > 0;
    fprintf(f, "%-38s %-22s %12s %11s %7s %12s %9s %9s %9s %9s %9s %9s %6s %6s %7s %7s%s\n", "test", "db", "ops/s", "range",
            "xbest", "ops/CPU-s", "p50", "p99", "p99.9", "B/op", "maxRSS", "disk", "WA", "SA", "majflt", "refault",
            cg ? "    cgpeak" : "");
    for (size_t t = 0; t < run->ntests; t++) {
        for (size_t d = 0; d < run->ndbs; d++) {
            const ub_result *r = R(run, t, d);
            char ops[32], ra[32], cpu[32], p50[16], p99[16], p999[16], al[16], rss[16], disk[16], wa[16], sa[16];
            char rg[32], mf[24], rf[24], name[96];
            fmt_ops(ops, sizeof ops, r);
            fmt_range(rg, sizeof rg, r);
            fmt_faults(mf, sizeof mf, r->majfaults);
            fmt_faults(rf, sizeof rf, r->refaults);
            db_cell(name, sizeof name, run->dbs[d], 0);
            fmt_ratio(ra, sizeof ra, run, t, d);
            fmt_cpu(cpu, sizeof cpu, r);
            fmt_ns(p50, sizeof p50, r->p50_ns);
            fmt_ns(p99, sizeof p99, r->p99_ns);
            fmt_ns(p999, sizeof p999, r->p999_ns);
            fmt_alloc(al, sizeof al, r->alloc_bytes_per_op);
            fmt_bytes(rss, sizeof rss, (double)r->max_rss_bytes);
            fmt_bytes(disk, sizeof disk, (double)r->disk_bytes);
            fmt_amp(wa, sizeof wa, r->write_amp);
            fmt_amp(sa, sizeof sa, r->space_amp);
            char cgp[24] = "";
            if (cg) { cgp[0] = ' '; fmt_bytes(cgp + 1, sizeof cgp - 1, (double)r->cgroup_peak_bytes); }
            fprintf(f, "%-38s %-22s %12s %11s %7s %12s %9s %9s %9s %9s %9s %9s %6s %6s %7s %7s%10s\n", r->test, name, ops,
                    rg, ra, cpu, p50, p99, p999, al, rss, disk, wa, sa, mf, rf, cgp);
        }
        long b = best_peer(run, t);
        fprintf(f, "%-38s best peer: %s\n", "", b >= 0 ? run->dbs[b]->name : "-");
    }
    for (size_t i = 0; i < run->ndbs * run->ntests; i++) {
        const ub_result *r = &run->results[i];
        if (r->error[0]) fprintf(f, "# %s %s FAILED: %s\n", r->test, r->db, r->error);
        if (r->note[0]) fprintf(f, "# %s %s: %s\n", r->test, r->db, r->note);
    }
}

static void print_markdown(const ub_run *run, FILE *f)
{
    print_header(run, f, 1);
    print_headline(run, f, 1);
    int cg = run->cfg->mem_limit_bytes > 0;
    fprintf(f, "\n| test | db | ops/s (median) | range | x best peer | ops/CPU-s | p50 | p99 | p99.9 | B/op | max RSS | disk "
               "| WA | SA | majflt | refault |%s\n", cg ? " cgroup peak |" : "");
    fprintf(f, "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
               "| ---: |%s\n", cg ? " ---: |" : "");
    for (size_t t = 0; t < run->ntests; t++) {
        long bp = best_peer(run, t);
        for (size_t d = 0; d < run->ndbs; d++) {
            const ub_result *r = R(run, t, d);
            char ops[32], ra[48], cpu[32], p50[16], p99[16], p999[16], al[16], rss[16], disk[16], wa[16], sa[16];
            char rg[32], mf[24], rf[24], name[160];
            fmt_ops(ops, sizeof ops, r);
            fmt_range(rg, sizeof rg, r);
            fmt_faults(mf, sizeof mf, r->majfaults);
            fmt_faults(rf, sizeof rf, r->refaults);
            db_cell(name, sizeof name, run->dbs[d], 1);
            fmt_ratio(ra, sizeof ra, run, t, d);
            fmt_cpu(cpu, sizeof cpu, r);
            fmt_ns(p50, sizeof p50, r->p50_ns);
            fmt_ns(p99, sizeof p99, r->p99_ns);
            fmt_ns(p999, sizeof p999, r->p999_ns);
            fmt_alloc(al, sizeof al, r->alloc_bytes_per_op);
            fmt_bytes(rss, sizeof rss, (double)r->max_rss_bytes);
            fmt_bytes(disk, sizeof disk, (double)r->disk_bytes);
            fmt_amp(wa, sizeof wa, r->write_amp);
            fmt_amp(sa, sizeof sa, r->space_amp);
            if ((long)d == bp) strncat(ra, " (best)", sizeof ra - strlen(ra) - 1);
            char cgp[24] = "";
            if (cg) fmt_bytes(cgp, sizeof cgp, (double)r->cgroup_peak_bytes);
            fprintf(f, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |%s%s%s\n",
                    d == 0 ? r->test : "", name, ops, rg, ra, cpu, p50, p99, p999, al, rss, disk, wa, sa, mf, rf,
                    cg ? " " : "", cgp, cg ? " |" : "");
        }
    }
    int any = 0;
    for (size_t i = 0; i < run->ndbs * run->ntests; i++) {
        const ub_result *r = &run->results[i];
        if (!r->error[0] && !r->note[0]) continue;
        if (!any++) fprintf(f, "\n");
        if (r->error[0]) fprintf(f, "- **%s %s failed**: %s\n", r->test, r->db, r->error);
        if (r->note[0]) fprintf(f, "- %s %s: %s\n", r->test, r->db, r->note);
    }
}

static json_object *jnum(double v, double scale)
{
    if (v < 0 || isnan(v)) return NULL;
    return json_object_new_double(round(v * scale) / scale);
}

static json_object *build_json(const ub_run *run)
{
    const ub_config *c = run->cfg;
    json_object *root = json_object_new_object(), *cfg = json_object_new_object();
    json_object_object_add(cfg, "keys", json_object_new_int64((int64_t)c->keys));
    json_object_object_add(cfg, "valsize", json_object_new_int64((int64_t)c->valsize));
    json_object_object_add(cfg, "val_pattern", json_object_new_string(c->pattern_arg));
    json_object_object_add(cfg, "values", json_object_new_string(ub_values_describe()));
    json_object_object_add(cfg, "threads", json_object_new_int(c->threads));
    json_object_object_add(cfg, "batchsize", json_object_new_int64((int64_t)c->batchsize));
    json_object_object_add(cfg, "seed", json_object_new_int64((int64_t)c->seed));
    json_object_object_add(cfg, "profile", json_object_new_string(profile_name(c)));
    json_object_object_add(cfg, "max_wall_s", json_object_new_double(c->max_wall_s));
    json_object_object_add(cfg, "compression", json_object_new_string(run->compression));
    json_object_object_add(cfg, "vlog_mmap_budget_bytes",
                           c->vlog_mmap_budget_set ? json_object_new_int64((int64_t)c->vlog_mmap_budget) : NULL);
    json_object_object_add(cfg, "vlog_mmap_budget_applied", json_object_new_boolean(c->vlog_mmap_budget_applied));
    json_object_object_add(cfg, "vlog_mmap_note", json_object_new_string(run->mmap_note));
    static const char *const codec[] = { "none", "lz4", "zlib", "zstd" }, *const sync[] = { "none", "batch", "seal" };
    json_object_object_add(cfg, "vlog_codec", json_object_new_string(codec[c->vlog_codec]));
    json_object_object_add(cfg, "vlog_dict", json_object_new_string(c->vlog_dict_auto ? "auto" : "off"));
    json_object_object_add(cfg, "vlog_sync", json_object_new_string(sync[c->vlog_sync]));
    json_object_object_add(cfg, "vlog_write_buffer_bytes", json_object_new_int64((int64_t)c->vlog_write_buffer));
    json_object_object_add(cfg, "vlog_write_map", json_object_new_int(c->vlog_write_map));
    json_object_object_add(cfg, "runs", json_object_new_int(c->runs));
    json_object_object_add(cfg, "lmdb_nordahead",
                           json_object_new_string(c->lmdb_nordahead < 0 ? "auto" : c->lmdb_nordahead ? "on" : "off"));
    json_object_object_add(cfg, "vlog_segment_bytes", json_object_new_int64((int64_t)c->vlog_segment_bytes));
    char fr[16];
    json_object_object_add(cfg, "vlog_frames", json_object_new_string(frames_arg(c, fr, sizeof fr)));
    json_object_object_add(cfg, "dir", json_object_new_string(c->dir));
    json_object_object_add(cfg, "keep", json_object_new_boolean(c->keep));
    json_object_object_add(cfg, "ratio_reference", json_object_new_string("best peer per test"));
    json_object_object_add(cfg, "headline", json_object_new_string(HEADLINE));
    json_object_object_add(cfg, "refaults_source", json_object_new_string(ub_refaults_source()));
    json_object_object_add(cfg, "base_rss_bytes", json_object_new_int64((int64_t)run->base_rss_bytes));
    json_object_object_add(cfg, "mem_limit_bytes", json_object_new_int64((int64_t)c->mem_limit_bytes));
    json_object_object_add(cfg, "mem_limit_note", run->mem_note[0] ? json_object_new_string(run->mem_note) : NULL);
    json_object_object_add(cfg, "replay_trace", c->replay_path ? json_object_new_string(c->replay_path) : NULL);
    {
        static const char *const gcm[] = { "manual", "off", "background" };
        char gcp[512];
        ub_vlog_gc_describe(c, gcp, sizeof gcp);
        json_object_object_add(cfg, "vlog_gc", json_object_new_string(gcm[c->vlog_gc]));
        json_object_object_add(cfg, "vlog_gc_policy", json_object_new_string(gcp));
    }
    json_object_object_add(cfg, "load_average_start", json_object_new_string(run->load_start));
    json_object_object_add(cfg, "load_average_end", json_object_new_string(run->load_end));
    json_object_object_add(root, "config", cfg);
    json_object_object_add(root, "machine", json_object_new_string(run->machine));
    json_object *dbs = json_object_new_array();
    for (size_t d = 0; d < run->ndbs; d++) {
        json_object *o = json_object_new_object();
        char opts[2048];
        run->dbs[d]->describe(c, opts, sizeof opts);
        json_object_object_add(o, "name", json_object_new_string(run->dbs[d]->name));
        json_object_object_add(o, "what", json_object_new_string(run->dbs[d]->what));
        json_object_object_add(o, "options", json_object_new_string(opts));
        json_object_object_add(o, "notes", json_object_new_string(run->dbs[d]->notes));
        char sy[512] = "";
        if (run->dbs[d]->syncs) run->dbs[d]->syncs(c, sy, sizeof sy);
        json_object_object_add(o, "syncs", json_object_new_string(sy));
        json_object_object_add(o, "peer", json_object_new_boolean(run->dbs[d]->peer));
        json_object_object_add(o, "reference", json_object_new_boolean(run->dbs[d]->reference));
        json_object_object_add(o, "label", run->dbs[d]->label ? json_object_new_string(run->dbs[d]->label) : NULL);
        json_object_array_add(dbs, o);
    }
    json_object_object_add(root, "databases", dbs);
    json_object *res = json_object_new_array();
    for (size_t t = 0; t < run->ntests; t++) {
        for (size_t d = 0; d < run->ndbs; d++) {
            const ub_result *r = R(run, t, d);
            json_object *o = json_object_new_object();
            int ok = r->ops_per_sec >= 0 && !r->skipped;
            json_object_object_add(o, "db", json_object_new_string(r->db));
            json_object_object_add(o, "test", json_object_new_string(r->test));
            json_object_object_add(o, "valsize", r->valsize == floor(r->valsize)
                                                     ? json_object_new_int64((int64_t)r->valsize)
                                                     : jnum(r->valsize, 10)); /* trace: the mean */
            json_object_object_add(o, "threads", json_object_new_int(r->threads));
            json_object_object_add(o, "ops_per_sec", ok ? jnum(r->ops_per_sec, 10) : NULL); /* the median run */
            json_object_object_add(o, "ops_per_sec_min", ok ? jnum(r->ops_per_sec_min, 10) : NULL);
            json_object_object_add(o, "ops_per_sec_max", ok ? jnum(r->ops_per_sec_max, 10) : NULL);
            json_object_object_add(o, "runs", json_object_new_int(r->runs));
            long bp = best_peer(run, t);
            double x = ratio(run, t, d);
            json_object_object_add(o, "best_peer", bp >= 0 ? json_object_new_string(run->dbs[bp]->name) : NULL);
            json_object_object_add(o, "ratio_to_best_peer", x >= 0 ? jnum(x, 10000) : NULL);
            json_object_object_add(o, "majfaults", json_object_new_int64((int64_t)r->majfaults));
            json_object_object_add(o, "refaults", json_object_new_int64((int64_t)r->refaults));
            json_object_object_add(o, "p50_ns", r->hist.n ? json_object_new_int64((int64_t)r->p50_ns) : NULL);
            json_object_object_add(o, "p99_ns", r->hist.n ? json_object_new_int64((int64_t)r->p99_ns) : NULL);
            json_object_object_add(o, "p999_ns", r->hist.n ? json_object_new_int64((int64_t)r->p999_ns) : NULL);
            json_object_object_add(o, "alloc_bytes_per_op", r->ops ? jnum(r->alloc_bytes_per_op, 1000) : NULL);
            json_object_object_add(o, "max_rss_bytes", json_object_new_int64((int64_t)r->max_rss_bytes));
            json_object_object_add(o, "disk_bytes", r->live_bytes ? json_object_new_int64((int64_t)r->disk_bytes) : NULL);
            json_object_object_add(o, "write_amp", jnum(r->write_amp, 10000));
            json_object_object_add(o, "space_amp", jnum(r->space_amp, 10000));
            /* beyond the documented keys */
            json_object_object_add(o, "ops", json_object_new_int64((int64_t)r->ops));
            json_object_object_add(o, "elapsed_s", jnum(r->elapsed_s, 1e6));
            json_object_object_add(o, "cpu_s", jnum(r->cpu_s, 1e6)); /* process, timed phase + settle */
            json_object_object_add(o, "thread_cpu_s", jnum(r->thread_cpu_s, 1e6)); /* measuring threads */
            json_object_object_add(o, "ops_per_cpu_sec", ok && r->cpu_s > 0 ? jnum((double)r->ops / r->cpu_s, 10) : NULL);
            json_object_object_add(o, "user_bytes_written",
                                   r->user_bytes_written ? json_object_new_int64((int64_t)r->user_bytes_written) : NULL);
            json_object_object_add(o, "device_bytes_written",
                                   r->user_bytes_written ? json_object_new_int64((int64_t)r->device_bytes_written) : NULL);
            json_object_object_add(o, "live_bytes", r->live_bytes ? json_object_new_int64((int64_t)r->live_bytes) : NULL);
            json_object_object_add(o, "verify_failures", json_object_new_int64((int64_t)r->verify_failures));
            json_object_object_add(o, "skipped", json_object_new_boolean(r->skipped));
            json_object_object_add(o, "cgroup_peak_bytes",
                                   run->cfg->mem_limit_bytes ? json_object_new_int64((int64_t)r->cgroup_peak_bytes) : NULL);
            /* Our log's GC counters at the test's end, cumulative since the open: null for
             * the databases that are not our log. */
            json_object_object_add(o, "gc_relocated_bytes",
                                   r->has_gc_counters ? json_object_new_int64((int64_t)r->gcc.relocated_bytes) : NULL);
            if (r->has_gc_counters) {
                json_object_object_add(o, "gc_stalls", json_object_new_int64((int64_t)r->gcc.stalls));
                json_object_object_add(o, "gc_segments_deleted", json_object_new_int64((int64_t)r->gcc.segments_deleted));
                json_object_object_add(o, "log_space_amp", jnum(r->gcc.space_amp, 10000));
            }
            if (!strcmp(r->test, "churn") && run->dbs[d]->gc) {
                json_object_object_add(o, "gc_s", jnum(r->gc_s, 1e6));
                json_object_object_add(o, "gc_segments", json_object_new_int64((int64_t)r->gc.runs));
                json_object_object_add(o, "gc_bytes_reclaimed", json_object_new_int64((int64_t)r->gc.bytes_reclaimed));
                json_object_object_add(o, "gc_relocated", json_object_new_int64((int64_t)r->gc.relocated));
            }
            if (!strcmp(r->test, "replay")) {
                json_object_object_add(o, "hits", json_object_new_int64((int64_t)r->hits));
                json_object_object_add(o, "misses", json_object_new_int64((int64_t)r->misses));
            }
            json_object_object_add(o, "truncated", json_object_new_boolean(r->truncated));
            json_object_object_add(o, "error", r->error[0] ? json_object_new_string(r->error) : NULL);
            json_object_object_add(o, "note", r->note[0] ? json_object_new_string(r->note) : NULL);
            json_object *h = json_object_new_array();
            for (int i = 0; i < UB_HIST_BUCKETS; i++) {
                if (!r->hist.count[i]) continue;
                json_object *p = json_object_new_array();
                json_object_array_add(p, json_object_new_int64((int64_t)ub_hist_bucket_hi(i)));
                json_object_array_add(p, json_object_new_int64((int64_t)r->hist.count[i]));
                json_object_array_add(h, p);
            }
            json_object_object_add(o, "latency_buckets_ns", h);
            json_object_array_add(res, o);
        }
    }
    json_object_object_add(root, "results", res);
    return root;
}

void ub_print(const ub_run *run, ub_format fmt, FILE *f)
{
    if (fmt == UB_FMT_JSON) {
        json_object *root = build_json(run);
        fprintf(f, "%s\n", json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
        json_object_put(root);
    } else if (fmt == UB_FMT_MARKDOWN) {
        print_markdown(run, f);
    } else {
        print_table(run, f);
    }
    fflush(f);
}

/* ---------------------------------------------------------------- plots */

static int write_plots(const ub_run *run, const char *dir)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/ops.dat", dir);
    FILE *f = fopen(path, "w");
    if (!f) { ub_seterr("cannot write %s", path); return -1; }
    fprintf(f, "test");
    for (size_t d = 0; d < run->ndbs; d++) fprintf(f, " %s", run->dbs[d]->name);
    fprintf(f, "\n");
    for (size_t t = 0; t < run->ntests; t++) {
        fprintf(f, "%s", run->tests[t]);
        for (size_t d = 0; d < run->ndbs; d++) {
            const ub_result *r = R(run, t, d);
            if (r->ops_per_sec > 0) fprintf(f, " %.0f", r->ops_per_sec);
            else fprintf(f, " ?");
        }
        fprintf(f, "\n");
    }
    fclose(f);
    /* Latency CDFs: one gnuplot data block per (test, db), in that order. */
    snprintf(path, sizeof path, "%s/latency.dat", dir);
    if (!(f = fopen(path, "w"))) { ub_seterr("cannot write %s", path); return -1; }
    for (size_t t = 0; t < run->ntests; t++) {
        for (size_t d = 0; d < run->ndbs; d++) {
            const ub_result *r = R(run, t, d);
            fprintf(f, "# %s %s\n", run->tests[t], run->dbs[d]->name);
            uint64_t cum = 0;
            int first = 1;
            for (int i = 0; i < UB_HIST_BUCKETS && r->hist.n; i++) {
                if (!r->hist.count[i]) continue;
                if (first) { fprintf(f, "%llu 0\n", (unsigned long long)(ub_hist_bucket_mid(i) * 15 / 16)); first = 0; }
                cum += r->hist.count[i];
                fprintf(f, "%llu %.4f\n", (unsigned long long)ub_hist_bucket_hi(i), 100.0 * (double)cum / (double)r->hist.n);
            }
            if (first) fprintf(f, "1 NaN\n"); /* keeps the block (and the indices) in place */
            fprintf(f, "\n\n");
        }
    }
    fclose(f);
    const ub_config *c = run->cfg;
    char title[512];
    snprintf(title, sizeof title, "%llu keys, %s values (%.0f B), profile %s, %d threads",
             (unsigned long long)c->keys, c->pattern_arg, ub_value_mean_len(), profile_name(c), c->threads);
    char dbnames[256] = "";
    for (size_t d = 0; d < run->ndbs; d++) {
        strncat(dbnames, run->dbs[d]->name, sizeof dbnames - strlen(dbnames) - 2);
        strncat(dbnames, " ", sizeof dbnames - strlen(dbnames) - 1);
    }
    char tests[1024] = "";
    for (size_t t = 0; t < run->ntests; t++) {
        strncat(tests, run->tests[t], sizeof tests - strlen(tests) - 2);
        strncat(tests, " ", sizeof tests - strlen(tests) - 1);
    }
    snprintf(path, sizeof path, "%s/plots.gp", dir);
    if (!(f = fopen(path, "w"))) { ub_seterr("cannot write %s", path); return -1; }
    int cols = run->ntests < 3 ? (int)run->ntests : 3, rows = ((int)run->ntests + cols - 1) / cols;
    fprintf(f,
            "# Written by unified-bench; run `gnuplot plots.gp` in this directory.\n"
            "set terminal pngcairo size 1400,700 font 'sans,10'\n"
            "# more than gnuplot's 8 default colours: the references get their own\n"
            "set linetype 9 lc rgb '#999999'\nset linetype 10 lc rgb '#444444'\n"
            "set linetype 11 lc rgb '#cc6677'\nset linetype 12 lc rgb '#117733'\n"
            "set output 'ops.png'\n"
            "set title \"ops/s per test and database (log scale, higher is better)\\n%s\"\n"
            "set datafile missing '?'\n"
            "set style data histogram\n"
            "set style histogram clustered gap 1\n"
            "set style fill solid 0.85 border -1\n"
            "set boxwidth 0.9\n"
            "set logscale y\n"
            "set format y '%%.0s%%c'\n"
            "set ylabel 'ops/s'\n"
            "set grid ytics\n"
            "set key outside right top\n"
            "set xtics rotate by 30 right scale 0 noenhanced\n"
            "plot for [i=2:%zu] 'ops.dat' using i:xtic(1) title columnheader(i) noenhanced\n"
            "\n"
            "set terminal pngcairo size %d,%d font 'sans,9'\n"
            "set output 'latency.png'\n"
            "unset title\n"
            "reset\n"
            "set linetype 9 lc rgb '#999999'\nset linetype 10 lc rgb '#444444'\n"
            "set linetype 11 lc rgb '#cc6677'\nset linetype 12 lc rgb '#117733'\n"
            "dbs = \"%s\"\n"
            "tests = \"%s\"\n"
            "set multiplot layout %d,%d title \"latency distribution (CDF) per test, %s\"\n"
            "set logscale x\n"
            "set format x '%%.0s%%cs'\n"
            "set xlabel 'latency (s)'\n"
            "set ylabel 'percentile'\n"
            "set yrange [0:100]\n"
            "set grid\n"
            "set key right bottom font ',8'\n"
            "do for [t=0:%zu] {\n"
            "  set title word(tests, t+1) noenhanced\n"
            "  plot for [d=0:%zu] 'latency.dat' index (t*%zu+d) using ($1*1e-9):2 with steps lw 2 title word(dbs, d+1) noenhanced\n"
            "}\n"
            "unset multiplot\n",
            title, run->ndbs + 1, 480 * cols, 360 * rows, dbnames, tests, rows, cols, title, run->ntests - 1,
            run->ndbs - 1, run->ndbs);
    fclose(f);
    char cmd[4400];
    snprintf(cmd, sizeof cmd, "cd '%s' && gnuplot plots.gp", dir);
    int st = system(cmd);
    if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        ub_seterr("gnuplot failed on %s/plots.gp (is gnuplot installed? Debian: gnuplot-nox)", dir);
        return -1;
    }
    return 0;
}

int ub_write_profile_dir(const ub_run *run, const char *dir)
{
    if (ub_mkdir_p(dir)) { ub_seterr("cannot create %s", dir); return -1; }
    char path[4200];
    snprintf(path, sizeof path, "%s/results.json", dir);
    json_object *root = build_json(run);
    int rc = json_object_to_file_ext(path, root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE);
    json_object_put(root);
    if (rc) { ub_seterr("cannot write %s", path); return -1; }
    snprintf(path, sizeof path, "%s/results.md", dir);
    FILE *f = fopen(path, "w");
    if (!f) { ub_seterr("cannot write %s", path); return -1; }
    fprintf(f, "# unified-bench results\n\n");
    print_markdown(run, f);
    fprintf(f, "\n![ops/s per test and database](ops.png)\n\n![latency distribution](latency.png)\n");
    fclose(f);
    return write_plots(run, dir);
}
