/*
 * vlog_man.c — what `vlog inspect` and `vlog verify` show of the MANIFEST
 * (docs/FORMAT.md §9): its listing (vlog_manifest) beside the directory's own, so
 * that both directions are seen: files it lists that are missing, files present that
 * it does not list, pending delete intents.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/vlog_cmd.h"

/* "NNNNNNNNNN.<ext>" (10 digits, 1 .. 2^32-1): its id, else 0. */
static uint32_t id_of(const char *name, const char *ext)
{
    uint64_t v = 0;
    for (int i = 0; i < 10; i++) {
        if (name[i] < '0' || name[i] > '9') return 0;
        v = v * 10 + (uint64_t)(name[i] - '0');
    }
    return strcmp(name + 10, ext) == 0 && v <= UINT32_MAX ? (uint32_t)v : 0;
}

static int push(uint32_t **a, size_t *n, size_t *cap, uint32_t v)
{
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 16;
        uint32_t *b = realloc(*a, nc * sizeof *b);
        if (!b) return -1;
        *a = b;
        *cap = nc;
    }
    (*a)[(*n)++] = v;
    return 0;
}

static int cmp_u32(const void *x, const void *y)
{
    uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
    return a < b ? -1 : a > b;
}

static int has(const uint32_t *a, size_t n, uint32_t v)
{
    return n && bsearch(&v, a, n, sizeof *a, cmp_u32) != NULL;
}

int man_view_load(vlog *log, const char *dir, man_view *v)
{
    memset(v, 0, sizeof *v);
    int rc = vlog_manifest(log, &v->info, NULL, 0, NULL, 0);
    if (rc) return rc;
    v->segs = calloc(v->info.segment_count + 1, sizeof *v->segs);
    v->dicts = calloc(v->info.dict_count + 1, sizeof *v->dicts);
    if (!v->segs || !v->dicts) return VLOG_ENOMEM;
    if ((rc = vlog_manifest(log, &v->info, v->segs, v->info.segment_count, v->dicts, v->info.dict_count)) != 0)
        return rc;
    /* Without a MANIFEST (a version-1 log before its first write) nothing is listed,
     * and nothing is "unlisted" either. */
    if (!v->info.present) return VLOG_OK;
    /* The directory's own listing: segment and dictionary files by id. */
    uint32_t *segf = NULL, *dictf = NULL;
    size_t ns = 0, cs = 0, nd = 0, cd = 0;
    DIR *d = opendir(dir);
    if (!d) return VLOG_EIO;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        uint32_t id;
        if ((id = id_of(e->d_name, ".vseg")) != 0 && push(&segf, &ns, &cs, id)) rc = VLOG_ENOMEM;
        if ((id = id_of(e->d_name, ".vdict")) != 0 && push(&dictf, &nd, &cd, id)) rc = VLOG_ENOMEM;
    }
    closedir(d);
    if (ns) qsort(segf, ns, sizeof *segf, cmp_u32);
    if (nd) qsort(dictf, nd, sizeof *dictf, cmp_u32);
    uint32_t *listed = calloc(v->info.segment_count + 1, sizeof *listed);
    if (!listed) rc = VLOG_ENOMEM;
    for (size_t i = 0; !rc && i < v->info.segment_count; i++) {
        listed[i] = v->segs[i].id;
        int there = has(segf, ns, v->segs[i].id);
        if (v->segs[i].state == VLOG_MAN_DELETE_INTENT) {
            if (there && push(&v->pending, &v->n_pending, &v->cap_pending, v->segs[i].id)) rc = VLOG_ENOMEM;
        } else if (!there && push(&v->missing_segs, &v->n_missing_segs, &v->cap_missing_segs, v->segs[i].id)) {
            rc = VLOG_ENOMEM;
        }
    }
    for (size_t i = 0; !rc && i < ns; i++)
        if (!has(listed, v->info.segment_count, segf[i]) &&
            push(&v->unlisted_segs, &v->n_unlisted_segs, &v->cap_unlisted_segs, segf[i]))
            rc = VLOG_ENOMEM;
    for (size_t i = 0; !rc && i < v->info.dict_count; i++)
        if (!has(dictf, nd, v->dicts[i]) &&
            push(&v->missing_dicts, &v->n_missing_dicts, &v->cap_missing_dicts, v->dicts[i]))
            rc = VLOG_ENOMEM;
    for (size_t i = 0; !rc && i < nd; i++)
        if (!has(v->dicts, v->info.dict_count, dictf[i]) &&
            push(&v->unlisted_dicts, &v->n_unlisted_dicts, &v->cap_unlisted_dicts, dictf[i]))
            rc = VLOG_ENOMEM;
    free(listed);
    free(segf);
    free(dictf);
    return rc;
}

void man_view_free(man_view *v)
{
    free(v->segs);
    free(v->dicts);
    free(v->missing_segs);
    free(v->unlisted_segs);
    free(v->missing_dicts);
    free(v->unlisted_dicts);
    free(v->pending);
    memset(v, 0, sizeof *v);
}

static const char *state_name(int s)
{
    return s == VLOG_MAN_RETIRED ? "retired" : s == VLOG_MAN_DELETE_INTENT ? "delete-intent" : "live";
}

static json_object *id_array(const uint32_t *a, size_t n)
{
    json_object *arr = json_object_new_array();
    for (size_t i = 0; i < n; i++) json_object_array_add(arr, json_object_new_int64(a[i]));
    return arr;
}

json_object *man_view_json(const man_view *v)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "present", json_object_new_boolean(v->info.present));
    json_add_u64(o, "last_id", v->info.last_id);
    json_object *segs = json_object_new_array();
    for (size_t i = 0; i < v->info.segment_count; i++) {
        const vlog_manifest_segment *g = &v->segs[i];
        json_object *s = json_object_new_object();
        json_add_u64(s, "id", g->id);
        json_add_string(s, "state", state_name(g->state));
        json_object_object_add(s, "sealed", json_object_new_boolean(g->sealed));
        json_add_u64(s, "version", g->version);
        json_add_u64(s, "data_bytes", g->sealed ? g->data_bytes : 0);
        json_add_u64(s, "durable_bytes", g->sealed ? 0 : g->data_bytes); /* the durable mark (FORMAT.md §9.4) */
        json_add_u64(s, "record_count", g->record_count);
        json_add_u64(s, "garbage_bytes", g->garbage_bytes);
        /* FORMAT.md §9.10: null when not recorded (it may use any dictionary). */
        json_object_object_add(s, "dictionaries", g->dicts_known ? id_array(g->dicts, g->dict_count <
                                                                   VLOG_MANIFEST_SEG_DICTS ? g->dict_count :
                                                                   VLOG_MANIFEST_SEG_DICTS) : NULL);
        json_object_array_add(segs, s);
    }
    json_object_object_add(o, "segments", segs);
    json_object_object_add(o, "dictionaries", id_array(v->dicts, v->info.dict_count));
    json_object *cur = json_object_new_object();
    for (unsigned c = 1; c < VLOG_CODEC_COUNT; c++) {
        json_object *j = json_object_new_object();
        json_add_u64(j, "id", v->info.current_dict[c]);
        json_object_object_add(j, "explicit", json_object_new_boolean(v->info.current_explicit[c]));
        json_add_double(j, "adopted_ratio", v->info.current_ratio_milli[c] / 1000.0, 3);
        json_object_object_add(cur, codec_label(c), j);
    }
    json_object_object_add(o, "current_dictionary", cur);
    json_object_object_add(o, "pending_delete_intents", id_array(v->pending, v->n_pending));
    json_object_object_add(o, "missing_segments", id_array(v->missing_segs, v->n_missing_segs));
    json_object_object_add(o, "unlisted_segments", id_array(v->unlisted_segs, v->n_unlisted_segs));
    json_object_object_add(o, "missing_dictionaries", id_array(v->missing_dicts, v->n_missing_dicts));
    json_object_object_add(o, "unlisted_dictionaries", id_array(v->unlisted_dicts, v->n_unlisted_dicts));
    return o;
}

static void id_row(const char *label, const uint32_t *a, size_t n)
{
    char line[512];
    size_t off = 0;
    line[0] = 0;
    for (size_t i = 0; i < n && off + 16 < sizeof line; i++)
        off += (size_t)snprintf(line + off, sizeof line - off, "%s%u", i ? ", " : "", a[i]);
    if (n) row_text(label, line);
}

/* A segment's recorded dictionaries (FORMAT.md §9.10): "any" when not recorded. */
static void seg_dicts_text(const vlog_manifest_segment *g, char *out, size_t cap)
{
    if (!g->dicts_known) { snprintf(out, cap, "%s", g->sealed ? "any (not recorded)" : "-"); return; }
    if (!g->dict_count) { snprintf(out, cap, "none"); return; }
    size_t off = 0;
    out[0] = 0;
    for (uint32_t k = 0; k < g->dict_count && k < VLOG_MANIFEST_SEG_DICTS && off + 16 < cap; k++)
        off += (size_t)snprintf(out + off, cap - off, "%s%u", k ? "," : "", g->dicts[k]);
    if (g->dict_count > VLOG_MANIFEST_SEG_DICTS && off + 16 < cap)
        snprintf(out + off, cap - off, " (+%u)", g->dict_count - VLOG_MANIFEST_SEG_DICTS);
}

void man_view_table(const man_view *v)
{
    if (!v->info.present) {
        row_text("MANIFEST", "none (a new or version-1 log: the first write creates it)");
        return;
    }
    char a[32], b[32], m[48];
    printf("\n%10s  %-13s  %-6s  %7s  %16s  %12s  %s\n", "MANIFEST", "state", "sealed", "version", "data bytes",
           "records", "dictionaries");
    for (size_t i = 0; i < v->info.segment_count; i++) {
        const vlog_manifest_segment *g = &v->segs[i];
        char refs[128];
        seg_dicts_text(g, refs, sizeof refs);
        /* Unsealed: the durable mark, the bytes of records known synced (§9.4). */
        snprintf(m, sizeof m, "%s synced", grouped(g->data_bytes, a));
        printf("%10u  %-13s  %-6s  %7u  %16s  %12s  %s\n", g->id, state_name(g->state), g->sealed ? "yes" : "no",
               g->version, g->sealed ? grouped(g->data_bytes, a) : g->data_bytes ? m : "-",
               g->sealed ? grouped(g->record_count, b) : "-", refs);
    }
    printf("\n");
    row_count("highest id", v->info.last_id);
    id_row("listed dicts", v->dicts, v->info.dict_count);
    if (v->info.dict_delete_intents) row_count("dict delete intents", v->info.dict_delete_intents);
    for (unsigned c = 1; c < VLOG_CODEC_COUNT; c++) {
        char label[40], line[96];
        snprintf(label, sizeof label, "current %s", codec_label(c));
        if (v->info.current_dict[c])
            snprintf(line, sizeof line, "%u (%s)", v->info.current_dict[c],
                     v->info.current_explicit[c] ? "explicit" : "auto mode");
        else
            snprintf(line, sizeof line, "none");
        row_text(label, line);
    }
    id_row("pending deletes", v->pending, v->n_pending);
    id_row("missing segments", v->missing_segs, v->n_missing_segs);
    id_row("unlisted segments", v->unlisted_segs, v->n_unlisted_segs);
    id_row("missing dicts", v->missing_dicts, v->n_missing_dicts);
    id_row("unlisted dicts", v->unlisted_dicts, v->n_unlisted_dicts);
}
